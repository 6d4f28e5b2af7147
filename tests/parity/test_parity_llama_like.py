"""Parity with Hugging Face eager for the families our Llama converter serves: Qwen2 (q/k/v
biases), Qwen3 (per-head q/k norms), Llama 3's rotary scaling, Mistral's sliding window, Gemma
((1 + w) RMSNorm, scaled embeddings, tanh-GELU gates), Gemma 2 (norms around each part,
soft-capping, alternating windows, query_pre_attn_scalar) and Gemma 3 (q/k norms, a local
rotary base, linear scaling on full layers; also the language model of a multimodal Gemma 3
checkpoint). Checkpoints: tests/tiny_decoders.py; checks and
tolerance: tests/decoder_parity.py.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tiny_decoders
from decoder_parity import (ONE, TOL, TWO, assert_padding_gets_nothing, assert_parity, hf_run,
                            swapped_head_pattern)

FAMILIES = ["qwen2", "qwen3", "llama3", "mistral", "gemma", "gemma2", "gemma3",
            "gemma3_multimodal"]


@pytest.mark.parametrize("family", FAMILIES)
def test_single_text_matches_hf(family):
    ours, hf = tiny_decoders.loaded(family)
    trace = ours.run(ONE)
    assert_parity(trace, *hf_run(hf, family, trace))


@pytest.mark.parametrize("family", FAMILIES)
def test_padded_batch_matches_hf_and_padding_gets_no_attention(family):
    ours, hf = tiny_decoders.loaded(family)
    trace = ours.run(TWO)
    mask = trace.attention_mask
    assert mask[0].sum() < mask[1].sum() and mask[0, -1] == 0, "the short text must be padded"
    assert_parity(trace, *hf_run(hf, family, trace))
    assert_padding_gets_nothing(trace)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_swapped_head_fails_the_comparison(family):
    ours, hf = tiny_decoders.loaded(family)
    trace = ours.run(ONE)
    out, _ = hf_run(hf, family, trace)
    with pytest.raises(AssertionError):
        assert_close(swapped_head_pattern(ours, trace), out.attentions[0], **TOL)


@pytest.mark.parametrize("family, grouped", [("qwen2", (5, 1)), ("qwen3", (3, 1)),
                                             ("gemma2", (3, 1)), ("mistral", (5, 1))])
def test_odd_head_counts_and_grouped_query_attention(family, grouped):
    ours, _ = tiny_decoders.loaded(family)
    assert (ours.cfg.n_heads, ours.cfg.n_kv_heads) == grouped
    trace = ours.run(ONE)
    assert trace.cache["blocks.0.attn.hook_k"].shape[1] == grouped[1]


@pytest.mark.parametrize("family, sliding", [
    ("mistral", [0, 1, 2]), ("gemma2", [0, 2]), ("gemma3", [0, 2]),
    ("gemma3_multimodal", [0, 2])])
def test_sliding_layers_show_their_window_in_the_pattern(family, sliding):
    """On a sliding layer a query sees only the last `window` keys: the heatmap is a band.
    Full layers keep attention further back."""
    ours, _ = tiny_decoders.loaded(family)
    window = ours.cfg.sliding_window
    trace = ours.run(ONE)
    n = trace.n_tokens
    assert n > window + 2
    q, k = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    too_far = q - k >= window
    for layer in range(ours.cfg.n_layers):
        pattern = trace.cache[f"blocks.{layer}.attn.hook_pattern"][0]  # [head, q, k]
        far = torch.count_nonzero(pattern[:, too_far])
        assert (far == 0) == (layer in sliding), (layer, far)


def test_gemma2_soft_caps_scores_and_logits():
    ours, _ = tiny_decoders.loaded("gemma2")
    cfg = ours.cfg
    assert (cfg.attn_softcap, cfg.final_softcap) == (4.0, 3.0)
    assert cfg.attn_scale == pytest.approx(10 ** -0.5)  # query_pre_attn_scalar, not d_head
    trace = ours.run(ONE)
    allowed = trace.cache["blocks.1.attn.hook_scores"] > -1e30
    assert trace.cache["blocks.1.attn.hook_scores"][allowed].abs().max() < 4.0
    raw = trace.cache["blocks.1.attn.hook_qk"] * cfg.attn_scale
    assert raw[allowed].abs().max() > 4.0, "the cap must bite on this checkpoint"
    assert trace.logits.abs().max() < 3.0


def test_llama3_scaling_gives_hf_frequencies_not_the_plain_ones():
    from model.rotary import inverse_frequencies

    ours, hf = tiny_decoders.loaded("llama3")
    ours_inv = ours.model.blocks[0].attn.rotary.inv_freq
    plain = inverse_frequencies(ours.cfg.d_head, ours.cfg.rope_theta)
    assert_close(ours_inv, hf.model.rotary_emb.inv_freq, atol=0, rtol=0)
    assert not torch.allclose(ours_inv, plain, rtol=1e-3)  # the scaling was applied


def test_qwen2_has_q_k_v_biases_but_none_on_the_output():
    ours, _ = tiny_decoders.loaded("qwen2")
    attn = ours.model.blocks[0].attn
    assert attn.b_Q is not None and attn.b_K is not None and attn.b_O is None
    assert attn.b_Q.abs().sum() > 0  # the random biases arrived


def test_gemma3_rotates_sliding_and_full_layers_differently():
    ours, hf = tiny_decoders.loaded("gemma3")
    blocks = ours.model.blocks
    assert blocks[0].attn.rotary.inv_freq[1] != blocks[1].attn.rotary.inv_freq[1]
    assert_close(blocks[1].attn.rotary.inv_freq,
                 hf.model.rotary_emb.full_attention_inv_freq, atol=0, rtol=0)
