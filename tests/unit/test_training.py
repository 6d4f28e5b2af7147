"""The training loop, the task data, the induction score, the encoder-decoder and the
training figures, on tiny configurations (seconds, not minutes)."""

from __future__ import annotations

import io
import json
import threading
import zipfile

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from model import load_model
from tiny_models import chance_score
from training import saving
from training import train as tr
from analysis.induction import (
    fresh_repeats, induction_score, previous_token_score, repeat_scores,
)
from analysis.cross_attention import cross_patterns, reversal_scores
from model.seq2seq import EncoderDecoder
from training.tasks import (
    HELD_OUT_PARAGRAPH, corpus, make_task, repeated_sequences, reversal_pairs, unigram_loss,
)
from server import training_runs as runs
from viz.attention import cross_attention_heatmap
from viz.training import loss_curve, smooth, snapshot_grid

TINY = dict(n_layers=1, n_heads=2, d_model=16, batch_size=8, warmup=5)


def settings(task: str, **overrides) -> tr.TrainSettings:
    return tr.TrainSettings(task=task, **{**TINY, **overrides})


# ------------------------------------------------------------------------------ the loop
def test_loss_falls_over_50_steps_on_a_tiny_character_model():
    result = tr.train(make_task("chars"), settings("chars", steps=50, lr=3e-3,
                                                   snapshot_every=25))
    first, last = np.mean(result.losses[:5]), np.mean(result.losses[-5:])
    assert len(result.losses) == 50 and result.stopped is None
    assert last < first - 0.5, (first, last)
    assert [s.step for s in result.snapshots] == [0, 25, 50]
    assert result.tokens == 50 * 8 * make_task("chars").n_ctx


def test_same_seed_same_run_other_seed_other_run():
    task = make_task("induction")
    a = tr.train(task, settings("induction", steps=4, snapshot_every=10)).losses
    b = tr.train(task, settings("induction", steps=4, snapshot_every=10)).losses
    c = tr.train(task, settings("induction", steps=4, snapshot_every=10, seed=1)).losses
    assert a == b and a != c
    before = torch.random.get_rng_state()
    tr.build(task, settings("induction"))
    assert torch.equal(before, torch.random.get_rng_state())  # the global generator untouched


def test_stop_flag_ends_the_run_and_keeps_the_model():
    stop = threading.Event()

    def on_step(step, loss):
        if step == 3:
            stop.set()

    result = tr.train(make_task("induction"), settings("induction", steps=100), on_step,
                      stop=stop)
    assert result.stopped == "stop requested" and len(result.losses) == 3
    assert result.snapshots[-1].step == 3  # a last snapshot of the model as it stopped
    assert isinstance(result.model, torch.nn.Module)


def test_time_bound_stops_the_run():
    result = tr.train(make_task("induction"), settings("induction", steps=100, max_seconds=0))
    assert result.stopped == "time limit" and result.losses == []


def test_snapshots_are_attention_patterns_on_the_probe():
    task = make_task("induction")
    result = tr.train(task, settings("induction", n_layers=2, steps=2, snapshot_every=1))
    q_tokens, k_tokens = task.probe()
    for snap in result.snapshots:
        assert snap.patterns.shape == (2, 2, len(q_tokens), len(k_tokens))
        rows = snap.patterns.astype(np.float32).sum(-1)  # [layer, head, q_pos]
        assert np.allclose(rows, 1, atol=2e-3)  # float16 storage
        assert np.all(np.triu(snap.patterns.astype(np.float32), k=1) == 0)  # causal
        assert set(snap.metrics) == {"induction score", "previous-token score"}


@pytest.mark.parametrize("bad, message", [
    (dict(d_model=30, n_heads=4), "multiple of the number of heads"),
    (dict(task="poetry"), "task must be one of"),
    (dict(steps=0), "at least 1"),
])
def test_settings_are_checked(bad, message):
    with pytest.raises(ValueError, match=message):
        tr.TrainSettings(**{**dict(task="chars"), **bad})


def test_app_settings_bound_size_and_snapshots():
    s = runs.app_settings("chars", 2, 4, 64, runs.MAX_STEPS, snapshot_every=10)
    assert s.max_seconds == runs.MAX_SECONDS and s.steps // s.snapshot_every <= runs.MAX_SNAPSHOTS
    with pytest.raises(ValueError, match="at most"):
        runs.app_settings("chars", runs.MAX_LAYERS + 1, 4, 64, 100, 10)


def test_background_run_reports_progress_and_saves(tmp_path):
    run = runs.TrainingRun(make_task("chars"), settings("chars", steps=6, snapshot_every=3),
                         tmp_path / "model")
    run.start()
    run.thread.join(60)
    status, losses, snapshots = run.view()
    assert status == "done" and len(losses) == 6 and [s.step for s in snapshots] == [0, 3, 6]
    lm = load_model(str(tmp_path / "model"))
    ids = torch.tensor([[1, 2, 3, 4]])
    assert_close(lm.model(ids).logits, run.result.model(ids).logits)
    names = set(zipfile.ZipFile(io.BytesIO(saving.model_archive(tmp_path / "model"))).namelist())
    assert names == {"config.json", "model.safetensors", "tokenizer.json"}


def test_server_refuses_runs_beyond_its_slots(monkeypatch):
    monkeypatch.setattr(runs, "_SLOTS", threading.BoundedSemaphore(1))
    gate = threading.Event()
    first = runs.TrainingRun(make_task("induction"), settings("induction", steps=1000))
    first._on_step = lambda step, loss: gate.wait(30)  # hold the only slot
    first.start()
    try:
        with pytest.raises(runs.ServerBusy):
            runs.TrainingRun(make_task("induction"), settings("induction", steps=2)).start()
    finally:
        first.stop()
        gate.set()
        first.thread.join(30)
    assert first.view()[0] == "stopped"


def test_a_failing_run_reports_its_error():
    task = make_task("induction")
    task.batch = lambda gen, n: (_ for _ in ()).throw(RuntimeError("bad batch"))
    run = runs.TrainingRun(task, settings("induction", steps=3))
    run.start()
    run.thread.join(30)
    assert run.view()[0] == "failed" and "bad batch" in run.error


# ------------------------------------------------------------------------------ the data
def test_repeated_sequences_repeat_a_stretch():
    ids, second = repeated_sequences(torch.Generator().manual_seed(0), 16, 48, 36)
    for row, mask in zip(ids, second):
        pos = mask.nonzero()[:, 0]
        length = len(pos)
        assert 8 <= length <= 24 and torch.equal(pos, torch.arange(pos[0], pos[0] + length))
        assert torch.equal(row[pos], row[pos - length])


def test_reversal_pairs_reverse_the_word():
    b = reversal_pairs(torch.Generator().manual_seed(0), 8, 3, 6, torch.arange(3, 29), 0, 1, 2)
    for src, target, dec_in, where in zip(b["src"], b["target"], b["dec_in"], b["source_pos"]):
        n = int((src > 2).sum())
        assert src[n] == 2 and target[n] == 2 and dec_in[0] == 1
        assert torch.equal(target[:n], src[:n].flip(0))
        assert torch.equal(dec_in[1: n + 1], target[:n])
        assert torch.equal(src[where[:n]], target[:n])  # source_pos names the copied letter


def test_corpus_is_ours_and_held_out_is_unseen():
    train, held = corpus()
    assert HELD_OUT_PARAGRAPH in held and HELD_OUT_PARAGRAPH not in train
    assert corpus() == (train, held)  # deterministic
    assert len(train) > 50_000 and "attends to" in train
    task = make_task("chars")
    # A uniform guess over the vocabulary is worse than the unigram baseline.
    assert task.unigram < np.log(len(task.chars))
    assert unigram_loss(task.held_ids, task.held_ids, len(task.chars)) < task.unigram + 0.05


def test_own_text_needs_enough_characters():
    with pytest.raises(ValueError, match="at least 400"):
        make_task("chars", "too short")
    task = make_task("chars", "Mary had a little lamb. " * 40)
    assert set(task.chars) >= set("Mary had") and task.held_ids.numel() >= 100


# -------------------------------------------------------------------- the induction score
def _causal_uniform(n: int) -> torch.Tensor:
    p = torch.ones(n, n).tril()  # [q_pos, k_pos]
    return p / p.sum(-1, keepdim=True)


def test_induction_score_of_known_patterns():
    length = 10
    perfect = torch.zeros(2 * length, 2 * length)
    perfect[0, 0] = 1
    for i in range(1, 2 * length):
        perfect[i, i - length + 1 if i >= length else i - 1] = 1
    patterns = torch.stack([perfect, _causal_uniform(2 * length)])[None]  # [1, head, q, k]
    scores = induction_score(patterns)
    assert_close(scores, torch.tensor([1.0, chance_score(length)]))
    assert previous_token_score(patterns)[1] < 0.2
    with pytest.raises(ValueError):
        induction_score(torch.zeros(1, 1, 5, 5))


def test_untrained_model_scores_near_chance():
    task = make_task("induction")
    model = tr.build(task, settings("induction", n_layers=2, n_heads=4, d_model=64))
    scores = repeat_scores(model.eval(), n_seqs=16, length=20, n_symbols=36)
    assert scores["induction"].shape == (2, 4)
    assert (scores["induction"] - chance_score(20)).abs().max() < 0.05


def test_fresh_repeats_have_distinct_tokens_in_each_copy():
    ids = fresh_repeats(torch.Generator().manual_seed(0), 4, 12, 36)
    assert torch.equal(ids[:, :12], ids[:, 12:])
    assert all(len(set(row[:12].tolist())) == 12 for row in ids)


# ---------------------------------------------------------------------- the encoder-decoder
def _tiny_pair() -> EncoderDecoder:
    task = make_task("reverse")
    return tr.build(task, settings("reverse")).eval(), task


def test_encoder_decoder_hook_names_come_from_the_module_tree():
    model, _ = _tiny_pair()
    names = model.hook_names
    assert "blocks.0.attn.hook_pattern" in names  # the encoder is the trunk
    assert "decoder.blocks.0.attn.hook_pattern" in names
    assert "decoder.blocks.0.cross_attn.hook_pattern" in names
    assert all(model.get_submodule(n).name == n for n in names)


def test_cross_attention_ignores_padding_and_sums_to_one():
    model, task = _tiny_pair()
    batch = task.batch(torch.Generator().manual_seed(0), 6)
    patterns = cross_patterns(model, batch["src"], batch["src_mask"], batch["dec_in"])
    assert patterns.shape == (1, 6, 2, batch["dec_in"].shape[1], batch["src"].shape[1])
    pad = (batch["src_mask"] == 0)[None, :, None, None, :]  # [1, batch, 1, 1, src_pos]
    assert pad.any() and torch.count_nonzero(patterns * pad) == 0
    assert_close(patterns.sum(-1), torch.ones(patterns.shape[:-1]))
    align, accuracy = reversal_scores(model, batch, 1, 2)
    assert align.shape == (1, 2) and accuracy == 0.0  # untrained


def test_encoder_decoder_saves_and_loads(tmp_path):
    model, task = _tiny_pair()
    saving.save_model(tmp_path / "rev", task, model, settings("reverse"))
    lm = load_model(str(tmp_path / "rev"))
    trace = lm.run("Abc")
    assert trace.tokens == ["a", "b", "c", "$"]  # lower-cased, EOS appended
    assert trace.special_mask[0].tolist() == [0, 0, 0, 1]
    n_out = len(trace.decoder_tokens[0])
    assert trace.cross_attentions.shape == (1, 2, n_out, 4)
    assert trace.attentions.shape == (1, 2, 4, 4)  # the encoder's self-attention
    config = json.loads((tmp_path / "rev" / "config.json").read_text())
    config["decoder"]["d_model"] = 32
    (tmp_path / "rev" / "config.json").write_text(json.dumps(config))
    with pytest.raises(Exception, match="d_model"):
        load_model(str(tmp_path / "rev"))


# ------------------------------------------------------------------------------ figures
def test_loss_curve_draws_loss_evals_scores_and_baseline():
    losses = np.linspace(3, 1, 2000)
    fig = loss_curve(losses, evals={"held-out loss": ([0, 1000], [3.1, 1.5])},
                     scores={"induction score": ([0, 2000], [0.05, 0.8])},
                     baseline=("unigram baseline", 2.9), total_steps=3000)
    assert len(fig.data) == 4 and len(fig.data[0].x) <= 600
    assert fig.data[3].yaxis == "y2" and fig.layout.xaxis.range == (0, 3000)
    assert any("2.90" in a.text for a in fig.layout.annotations)
    assert_close(torch.tensor(smooth(np.array([1.0, 3.0, 5.0]), 2)), torch.tensor([1.0, 2, 4]),
                 check_dtype=False)


def test_snapshot_grid_has_one_heatmap_per_head_and_masks_the_future():
    p = np.full((3, 4, 4), 0.25, dtype=np.float32)
    fig = snapshot_grid(p, list("abcd"), list("abcd"), "<b>t</b>")
    assert len(fig.data) == 3 and np.isnan(np.array(fig.data[0].z, dtype=float)[0, 1])
    assert "&lt;b&gt;" in fig.layout.title.text
    with pytest.raises(ValueError, match="head, len"):
        snapshot_grid(p, list("abc"), list("abcd"), "t")


def test_cross_attention_heatmap_labels_rows_by_what_they_write():
    fig = cross_attention_heatmap(np.eye(3)[::-1], ["^", "c", "b"], ["c", "b", "a"],
                                  ["a", "b", "c"])
    assert list(fig.data[0].y) == ["0·^→c", "1·c→b", "2·b→a"]
    assert "source" in fig.layout.xaxis.title.text
