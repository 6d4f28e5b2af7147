"""Parity with Hugging Face eager attention for DistilBERT, XLM-RoBERTa and ELECTRA, on tiny
random-weight checkpoints (tests/tiny_encoders.py: 3 heads, ELECTRA's narrow embeddings)
loaded through `load_model(path)` like a user's folder.

Tolerance: atol = rtol = 1e-5, as in test_model_parity.py: the same float32 operations in
the same order except for the heads' layout in the matmuls (DistilBERT divides q by √d_head
before q·k, we scale q·k: a rounding apart). Measured differences are 0 for all three; a
swapped weight moves the patterns or hidden states by far more (the negative controls below).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.testing import assert_close

import tiny_encoders
from model import ModelLoadError, load_model
from model.hooks import caching_hook, hooks

TOL = dict(atol=1e-5, rtol=1e-5)  # see the module docstring
FAMILIES = list(tiny_encoders.BUILDERS)
ONE = "The cat sat on the mat."
TWO = ["I love cats!", "Attention lets every token look at every other token."]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """family -> (our LoadedModel, HF's model read from the same folder)."""
    from transformers import AutoModel

    root = tmp_path_factory.mktemp("encoders")
    out = {}
    for family, build in tiny_encoders.BUILDERS.items():
        path = build(root / family)
        hf = AutoModel.from_pretrained(str(path), attn_implementation="eager").eval()
        out[family] = (load_model(str(path)), hf)
    return out


def hf_run(hf, family: str, trace):
    kwargs = dict(input_ids=trace.input_ids, attention_mask=trace.attention_mask)
    if family != "distilbert":  # DistilBERT has no segment embeddings
        kwargs["token_type_ids"] = trace.token_type_ids
    with torch.no_grad():
        return hf(**kwargs, output_attentions=True, output_hidden_states=True)


def our_stream(cache: dict, n_layers: int) -> list[torch.Tensor]:
    """The block inputs and outputs, as HF's hidden_states lists them (post-LN encoders)."""
    return [cache["blocks.0.hook_resid_pre"]] + [
        cache[f"blocks.{i}.hook_resid_post"] for i in range(n_layers)]


def assert_forward_parity(trace, out) -> None:
    n_layers = trace.cfg.n_layers
    assert len(out.attentions) == n_layers and len(out.hidden_states) == n_layers + 1
    for layer in range(n_layers):  # every pattern, every head, padding rows included
        assert_close(trace.cache[f"blocks.{layer}.attn.hook_pattern"], out.attentions[layer], **TOL)
    for ours, theirs in zip(our_stream(trace.cache, n_layers), out.hidden_states, strict=True):
        assert_close(ours, theirs, **TOL)
    assert_close(trace.final, out.last_hidden_state, **TOL)
    pooler = getattr(out, "pooler_output", None)
    assert (trace.pooled is None) == (pooler is None)  # XLM-R pools; DistilBERT, ELECTRA don't
    if pooler is not None:
        assert_close(trace.pooled, pooler, **TOL)


@pytest.mark.parametrize("family", FAMILIES)
def test_single_text_matches_hf(pairs, family):
    ours, hf = pairs[family]
    trace = ours.run(ONE)
    assert trace.cfg.n_heads == 3 and not trace.cfg.causal
    assert_forward_parity(trace, hf_run(hf, family, trace))


@pytest.mark.parametrize("family", FAMILIES)
def test_padded_batch_matches_hf_and_padding_gets_no_attention(pairs, family):
    ours, hf = pairs[family]
    trace = ours.run(TWO)
    mask = trace.attention_mask
    assert mask[0].sum() < mask[1].sum() and mask[0, -1] == 0, "the short text must be padded"
    assert_forward_parity(trace, hf_run(hf, family, trace))
    for layer in range(trace.cfg.n_layers):
        pattern = trace.cache[f"blocks.{layer}.attn.hook_pattern"]  # [batch, head, q, k]
        assert torch.count_nonzero(pattern[0][..., mask[0] == 0]) == 0


def hf_layer0_attention(hf, family: str, x: torch.Tensor):
    """HF's own block-0 attention on `x`: (output after the output projection, pattern)."""
    with torch.no_grad():
        if family == "distilbert":
            attention = hf.transformer.layer[0].attention
            return attention(x)
        attention = hf.encoder.layer[0].attention
        context, pattern = attention.self(x)
        return attention.output.dense(context), pattern


@pytest.mark.parametrize("family", FAMILIES)
def test_block0_attention_matches_hf_module_on_the_same_input(pairs, family):
    ours, hf = pairs[family]
    trace = ours.run(ONE)
    x = trace.cache["blocks.0.hook_resid_pre"]  # [batch, pos, d_model]
    theirs_out, theirs_pattern = hf_layer0_attention(hf, family, x)
    assert_close(trace.cache["blocks.0.attn.hook_pattern"], theirs_pattern, **TOL)
    assert_close(trace.cache["blocks.0.hook_attn_out"], theirs_out, **TOL)


def swapped(model, family: str):
    """A copy with one plausible conversion mistake: two heads' W_Q swapped (DistilBERT,
    XLM-R), or ELECTRA's projection transposed in its square corner."""
    broken = copy.deepcopy(model)
    with torch.no_grad():
        if family == "electra":
            w = broken.embed.project.weight  # [d_model, d_embed]
            n = w.shape[1]
            w[:n] = w[:n].T.clone()
        else:
            w_q = broken.blocks[0].attn.W_Q  # [head, d_model, d_head]
            w_q[[0, 1]] = w_q[[1, 0]].clone()
    return broken


@pytest.mark.parametrize("family", FAMILIES)
def test_a_swapped_weight_fails_the_comparison(pairs, family):
    """The negative control: the tolerance is far tighter than a real mistake's effect."""
    ours, hf = pairs[family]
    trace = ours.run(ONE)
    out = hf_run(hf, family, trace)
    cache = {}
    names = ["blocks.0.attn.hook_pattern", "blocks.1.hook_resid_post"]
    with torch.no_grad(), hooks(ours.model.hook_names,
                                [(n, caching_hook(cache)) for n in names]):
        swapped(ours.model, family)(trace.input_ids, trace.attention_mask, trace.token_type_ids)
    with pytest.raises(AssertionError):
        assert_close(cache["blocks.0.attn.hook_pattern"], out.attentions[0], **TOL)
    with pytest.raises(AssertionError):
        assert_close(cache["blocks.1.hook_resid_post"], out.hidden_states[2], **TOL)
    assert_close(trace.cache["blocks.0.attn.hook_pattern"], out.attentions[0], **TOL)


def test_electra_widens_its_narrow_embeddings_into_the_residual_stream(pairs):
    ours, hf = pairs["electra"]
    assert (ours.cfg.d_embed, ours.cfg.d_model) == (20, 36)
    trace = ours.run(ONE)
    normed = trace.cache["embed.ln.hook_normalized"]  # [batch, pos, d_embed]
    assert normed.shape[-1] == 20 and trace.cache["blocks.0.hook_resid_pre"].shape[-1] == 36
    with torch.no_grad():
        assert_close(hf.embeddings_project(normed), trace.cache["blocks.0.hook_resid_pre"], **TOL)


def test_xlm_roberta_numbers_positions_after_the_padding_index(pairs):
    ours, _ = pairs["xlm-roberta"]
    assert ours.cfg.pad_token_id == 1 and ours.cfg.position_offset == 2
    trace = ours.run(TWO)
    w_pos = ours.model.embed.W_pos.weight
    real = int(trace.attention_mask[0].sum())
    expected = torch.full((trace.n_tokens,), 1)
    expected[:real] = torch.arange(2, 2 + real)
    assert_close(trace.cache["embed.hook_pos"][0], w_pos[expected], atol=0, rtol=0)


def test_distilbert_with_a_task_head_loads_without_it(tmp_path):
    """DistilBertForSequenceClassification saves 'distilbert.'-prefixed weights and a head."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    path = tiny_encoders.make_distilbert(tmp_path / "bare")
    cfg = DistilBertConfig.from_pretrained(str(path))
    torch.manual_seed(1)
    DistilBertForSequenceClassification(cfg).save_pretrained(tmp_path / "bare")
    loaded = load_model(str(path))
    assert loaded.cfg.n_layers == 2 and loaded.run(ONE).attentions.shape[:2] == (2, 3)


def test_a_broken_distilbert_config_is_refused_by_name(tmp_path):
    import json

    path = tiny_encoders.make_distilbert(tmp_path / "d")
    data = json.loads((path / "config.json").read_text())
    del data["hidden_dim"]
    (path / "config.json").write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match="hidden_dim"):
        load_model(str(path))
