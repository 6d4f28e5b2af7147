"""Gemma 3's two config fields no other test sets, against Hugging Face's eager Gemma 3:
attn_logit_softcapping (Hugging Face keeps it in the config and never applies it, so neither
does the engine) and use_bidirectional_attention (EmbeddingGemma, Gemma3TextModel: every key
both ways, and a two-sided window on sliding layers). Tolerance: tests/decoder_parity.py."""

from __future__ import annotations

import functools

import pytest
import torch
from torch.testing import assert_close

import tiny_decoders
from decoder_parity import ONE, TOL, TWO, assert_padding_gets_nothing, assert_parity, hf_run
from model import load_model


@functools.cache
def embedding_gemma():
    from transformers import AutoModel

    path = tiny_decoders.saved("embedding_gemma")
    return load_model(str(path)), AutoModel.from_pretrained(
        str(path), attn_implementation="eager").eval()


def _hf_patterns(hf, trace):
    with torch.no_grad():
        return hf(input_ids=trace.input_ids, attention_mask=trace.attention_mask,
                  output_attentions=True, output_hidden_states=True)


@pytest.mark.parametrize("texts", [ONE, TWO])
def test_softcapping_set_in_the_config_is_left_off_as_hugging_face_does(texts):
    ours, hf = tiny_decoders.loaded("gemma3_capped")
    assert hf.config.attn_logit_softcapping == 0.5 and ours.cfg.attn_softcap is None
    trace = ours.run(texts)
    raw = trace.cache["blocks.1.attn.hook_qk"] * ours.cfg.attn_scale
    assert raw.abs().max() > 2.0, "a cap of 0.5 would change every pattern of this checkpoint"
    assert_parity(trace, *hf_run(hf, "gemma3_capped", trace))


@pytest.mark.parametrize("texts", [ONE, TWO])
def test_bidirectional_attention_matches_gemma3_text_model(texts):
    ours, hf = embedding_gemma()
    assert not ours.cfg.causal and not ours.cfg.has_lm_head
    trace = ours.run(texts)
    out = _hf_patterns(hf, trace)
    real = trace.attention_mask.bool()  # [batch, pos]: padded queries are not compared
    for layer in range(ours.cfg.n_layers):
        assert_close(trace.cache[f"blocks.{layer}.attn.hook_pattern"].transpose(1, 2)[real],
                     out.attentions[layer].transpose(1, 2)[real], **TOL)
        assert_close(trace.cache[f"blocks.{layer}.hook_resid_pre"][real],
                     out.hidden_states[layer][real], **TOL)
    assert_close(trace.final[real], out.last_hidden_state[real], **TOL)
    if len(texts) == 2:
        assert_padding_gets_nothing(trace)


def test_bidirectional_layers_look_both_ways_and_sliding_ones_within_the_window():
    ours, _ = embedding_gemma()
    trace = ours.run(ONE)
    n = trace.attention_mask.shape[1]
    window = 2 * tiny_decoders.WINDOW // 2 + 1  # Gemma3TextConfig: window // 2 + 1 each way
    assert ours.cfg.sliding_window == window and n > 2 * window
    later = torch.ones(n, n, dtype=torch.bool).triu(1)  # [q, k]: keys after the query
    full = trace.cache["blocks.1.attn.hook_pattern"][0]  # [head, q, k]
    assert torch.all(full[:, later] > 0), "a full layer sees every later key"
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs()
    sliding = trace.cache["blocks.0.attn.hook_pattern"][0]
    assert torch.count_nonzero(sliding[:, distance >= window]) == 0
    assert torch.all(sliding[:, (distance < window) & (distance > 0)] > 0)


def test_where_a_row_comes_from_uses_the_same_two_sided_window():
    from analysis.qk import qk_breakdown

    ours, _ = embedding_gemma()
    trace = ours.run(ONE)
    window, query = ours.cfg.sliding_window, 6
    row = qk_breakdown(trace, layer=0, head=1, query_pos=query)
    distance = (torch.arange(trace.attention_mask.shape[1]) - query).abs()
    assert (row["masked"] == (distance >= window).numpy()).all()
    assert_close(torch.from_numpy(row["softmax"]),
                 trace.cache["blocks.0.attn.hook_pattern"][0, 1, query], **TOL)
