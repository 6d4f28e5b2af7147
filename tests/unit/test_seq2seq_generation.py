"""Generation step by step for encoder–decoders (analysis/seq2seq_generation.py) and the
defaults of a model folder's generation_config.json (analysis/generation_config.py), on tiny
random-weight T5, BART and Marian folders saved by transformers (tests/tiny_seq2seq.py)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import tiny_seq2seq
from analysis.generation import Sampling
from analysis.generation_config import generation_defaults, read_defaults
from analysis.seq2seq_generation import generate_seq2seq, seq2seq_start, source_window
from model.loading import load_model

SOURCE = "the cat sat on the mat"


@pytest.mark.parametrize("family", ["t5", "bart", "marian"])
def test_greedy_is_hugging_faces_generate_and_each_step_its_numbers(family):
    lm, hf = tiny_seq2seq.loaded(family)
    src, _ = source_window(lm, SOURCE)
    g = generate_seq2seq(lm, src, 8, start=seq2seq_start(lm, generation_defaults(lm)))
    with torch.no_grad():  # HF's T5 cache is sized by num_layers: no cache (as the parity test)
        theirs = hf.generate(torch.tensor([src]), max_new_tokens=8, do_sample=False, num_beams=1,
                             use_cache=False)[0].tolist()
    end = len(g.ids)
    assert g.ids == theirs[:end] and g.ids[0] == lm.model.spec.start_id
    dec = torch.tensor([g.ids])
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([src]), decoder_input_ids=dec, output_attentions=True)
    for i, step in enumerate(g.steps):
        probs = out.logits[0, i].double().softmax(-1)
        assert step.top_ids[0] == step.chosen == g.ids[i + 1]
        assert step.top_probs[0] == pytest.approx(float(probs.max()), abs=1e-5)
        for layer, cross in enumerate(out.cross_attentions):  # [1, head, out_pos, src_pos]
            torch.testing.assert_close(g.cross[i][layer], cross[0, :, i], atol=1e-5, rtol=0)
            own = out.decoder_attentions[layer][0, :, i, :i + 1]  # [head, i + 1]
            torch.testing.assert_close(step.attention[layer], own, atol=1e-5, rtol=0)
    assert g.source_tokens == lm.tokenizer.tokens(src)


def test_sampling_is_seeded_and_stops_at_an_end_token():
    lm, _ = tiny_seq2seq.loaded("bart")
    src, _ = source_window(lm, SOURCE)
    hot = Sampling(greedy=False, temperature=3.0, seed=4)
    a, b = generate_seq2seq(lm, src, 30, hot), generate_seq2seq(lm, src, 30, hot)
    assert a.ids == b.ids
    c = generate_seq2seq(lm, src, 30, Sampling(greedy=False, temperature=3.0, seed=5))
    assert c.ids != a.ids
    # a start that names the first sampled token as an end token stops right there
    start = seq2seq_start(lm)
    from analysis.seq2seq_generation import Seq2SeqStart
    stop = generate_seq2seq(lm, src, 30, hot, Seq2SeqStart(start.start, (a.ids[1],)))
    assert stop.ids == a.ids[:2] and stop.stopped_at_end


@pytest.fixture
def folder_with_config(tmp_path):
    path = tmp_path / "t5"
    shutil.copytree(tiny_seq2seq.folder("t5"), path)
    config = {"decoder_start_token_id": 5, "eos_token_id": [9, 11], "forced_bos_token_id": 7,
              "pad_token_id": 0, "max_new_tokens": 17, "do_sample": True, "temperature": 0.7,
              "top_k": 12, "top_p": 0.9, "bos_token_id": 10 ** 9}
    (path / "generation_config.json").write_text(json.dumps(config))
    return path


def test_generation_config_sets_the_defaults_and_says_where(folder_with_config):
    lm = load_model(str(folder_with_config), device="cpu")
    d = generation_defaults(lm)
    assert d.path.endswith("generation_config.json")
    assert (d.decoder_start_token_id, d.eos_token_ids, d.forced_bos_token_id) == (5, (9, 11), 7)
    assert (d.max_new_tokens, d.do_sample, d.temperature, d.top_k, d.top_p) == \
        (17, True, 0.7, 12, 0.9)
    assert d.bos_token_id is None and "bos_token_id" in d.notes[0]  # outside the vocabulary
    start = seq2seq_start(lm, d)
    assert dict(start.settings_from)["start token"] == "generation_config.json"
    src, _ = source_window(lm, SOURCE)
    g = generate_seq2seq(lm, src, 6, start=start)
    assert g.ids[:2] == [5, 7] and g.forced_first  # its start, then the forced first token
    assert all(t not in (9, 11) for t in g.ids[2:-1])


def test_without_a_file_the_model_config_decides(tmp_path):
    path = tmp_path / "bart"
    shutil.copytree(tiny_seq2seq.folder("bart"), path)
    (path / "generation_config.json").unlink()
    lm = load_model(str(path), device="cpu")
    d = generation_defaults(lm)
    assert d.path is None and d.fields_set() == []
    start = seq2seq_start(lm, d)
    assert start.start == lm.model.spec.start_id
    assert dict(start.settings_from) == {"start token": "config.json", "end token": "config.json"}
    (path / "generation_config.json").write_text("[1, 2")
    assert "could not be read" in read_defaults(path, 100).notes[0]


def test_bad_requests_are_refused_in_words():
    lm, _ = tiny_seq2seq.loaded("t5")
    with pytest.raises(ValueError, match="new tokens"):
        generate_seq2seq(lm, [3, 4], 0)
    with pytest.raises(ValueError, match="token ids"):
        generate_seq2seq(lm, [3, 10 ** 6], 2)


def test_tiny_reverse_writes_the_word_backwards_as_its_run_does():
    lm = load_model("tiny-reverse", device="cpu")
    trace = lm.run("softmax")
    src, _ = source_window(lm, "softmax")
    g = generate_seq2seq(lm, src, 20, start=seq2seq_start(lm))
    assert g.ids[:-1] == trace.decoder_ids[0].tolist() and g.stopped_at_end
    assert lm.tokenizer.decode(g.new_ids[:-1]) == "xamtfos"
    assert dict(seq2seq_start(lm).settings_from)["start token"] == "the model's own tokenizer"
