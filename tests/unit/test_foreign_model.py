"""An architecture the engine does not know (BLOOM, from a random config) shows its attention
through Hugging Face's own code, only when asked, and never instead of a known family."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from torch.testing import assert_close

import tiny_foreign
from analysis.reference_check import unsupported_reason
from model import LoadedModel, ModelLoadError, load_model
from model.foreign import ForeignModel, knows

TEXTS = ["The cat sat on the mat.", "I love cats!"]


@pytest.fixture(scope="module")
def bloom_dir(tmp_path_factory):
    return tiny_foreign.make_bloom(tmp_path_factory.mktemp("foreign") / "bloom")


@pytest.fixture(scope="module")
def bloom(bloom_dir):
    return load_model(str(bloom_dir), foreign=True)


def test_unknown_architecture_is_refused_unless_asked(bloom_dir):
    assert not knows(json.loads((bloom_dir / "config.json").read_text()))
    with pytest.raises(ModelLoadError, match="unsupported architecture 'bloom'"):
        load_model(str(bloom_dir))


def test_its_attention_is_hugging_faces_own_for_every_layer(bloom, bloom_dir):
    from transformers import AutoModel

    assert isinstance(bloom, ForeignModel) and bloom.foreign
    assert (bloom.cfg.n_layers, bloom.cfg.n_heads, bloom.cfg.causal) == (2, 3, True)
    trace = bloom.run(TEXTS)
    assert trace.kind == "foreign" and trace.attentions.shape[:3] == (2, 2, 3)
    hf = AutoModel.from_pretrained(str(bloom_dir), attn_implementation="eager").eval()
    with torch.no_grad():
        out = hf(input_ids=trace.input_ids, attention_mask=trace.attention_mask,
                 output_attentions=True)
    for layer in range(2):  # the same numbers, read under the engine's hook names
        assert_close(trace.cache[f"blocks.{layer}.attn.hook_pattern"], out.attentions[layer],
                     atol=0, rtol=0)
    pattern = trace.attentions[1, 0]  # [head, q, k] of the padded second text
    padding = trace.attention_mask[1] == 0
    assert padding.any() and torch.count_nonzero(pattern[..., padding]) == 0
    assert torch.count_nonzero(trace.attentions[0, 0, 0].triu(1)) == 0  # causal: no look ahead


def test_only_the_patterns_are_kept_and_other_uses_say_why(bloom):
    trace = bloom.run(TEXTS[0])
    assert set(trace.cache) == {"blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"}
    assert "Attention page works" in bloom.pages_note and "GPT-2" in bloom.pages_note
    with pytest.raises(ValueError, match="Attention page"):
        bloom.run_ids([1, 2, 3])
    reason = unsupported_reason(bloom, None)
    assert reason and "Hugging Face's own code" in reason


def test_a_known_family_never_falls_back(tiny_dirs, tmp_path):
    native = load_model(str(tiny_dirs["bert"]), foreign=True)
    assert type(native) is LoadedModel and not getattr(native, "foreign", False)
    broken = tmp_path / "bert"
    shutil.copytree(tiny_dirs["bert"], broken)
    data = json.loads((broken / "config.json").read_text())
    data["position_embedding_type"] = "relative_key"  # a BERT feature the engine lacks
    (broken / "config.json").write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match="absolute position embeddings"):
        load_model(str(broken), foreign=True)


def test_an_encoder_decoder_it_does_not_know_is_refused_with_a_message(bloom_dir, tmp_path):
    folder = tmp_path / "seq2seq"
    shutil.copytree(bloom_dir, folder)
    data = json.loads((folder / "config.json").read_text())
    data.update(model_type="mystery", is_encoder_decoder=True)
    (folder / "config.json").write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match="encoder–decoder"):
        load_model(str(folder), foreign=True)
