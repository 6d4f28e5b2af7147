"""Parity with Hugging Face eager for the decoder families with their own converter:
GPT-NeoX / Pythia (parallel attention and MLP, partial rotary, fused per-head q/k/v; and with
use_parallel_residual false, sequential), Phi-3
(fused q/k/v and gate/up, partial rotary, a sliding window), OPT (positions from 2) and GPT-Neo
(unscaled attention, local layers). Checkpoints: tests/tiny_decoders.py; checks and tolerance:
tests/decoder_parity.py.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tiny_decoders
from decoder_parity import (ONE, TOL, TWO, assert_padding_gets_nothing, assert_parity, hf_run,
                            swapped_head_pattern)

FAMILIES = ["neox", "neox_sequential", "phi3", "opt", "gpt_neo"]


@pytest.mark.parametrize("family", FAMILIES)
def test_single_text_matches_hf(family):
    ours, hf = tiny_decoders.loaded(family)
    trace = ours.run(ONE)
    assert_parity(trace, *hf_run(hf, family, trace))


@pytest.mark.parametrize("family", FAMILIES)
def test_padded_batch_matches_hf(family):
    """GPT-Neo's rows for padding queries are left out: HF adds its local-window mask and the
    padding mask (float32's minimum twice, -inf), so a padding query whose window holds only
    padding gets a different meaningless row there. Real queries match, as do all other rows
    of the other families."""
    ours, hf = tiny_decoders.loaded(family)
    trace = ours.run(TWO)
    mask = trace.attention_mask
    assert mask[0].sum() < mask[1].sum() and mask[0, -1] == 0, "the short text must be padded"
    rows = mask.bool() if family == "gpt_neo" else None
    assert_parity(trace, *hf_run(hf, family, trace), rows=rows)
    assert_padding_gets_nothing(trace)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_swapped_head_fails_the_comparison(family):
    ours, hf = tiny_decoders.loaded(family)
    trace = ours.run(ONE)
    out, _ = hf_run(hf, family, trace)
    with pytest.raises(AssertionError):
        assert_close(swapped_head_pattern(ours, trace), out.attentions[0], **TOL)


def test_neox_rotates_a_quarter_of_each_head_and_runs_attention_beside_the_mlp():
    ours, hf = tiny_decoders.loaded("neox")
    cfg = ours.cfg
    assert (cfg.block, cfg.d_head, cfg.rotary_dim, cfg.n_heads) == ("parallel", 16, 4, 3)
    trace = ours.run(ONE)
    q, rot_q = trace.cache["blocks.0.attn.hook_q"], trace.cache["blocks.0.attn.hook_rot_q"]
    assert torch.equal(q[..., 4:], rot_q[..., 4:]) and not torch.equal(q[..., :4], rot_q[..., :4])
    assert "blocks.0.hook_resid_mid" not in ours.hook_names  # nothing lies between the two
    block = [trace.cache[f"blocks.0.{n}"] for n in ("hook_resid_pre", "hook_attn_out",
                                                     "hook_mlp_out", "hook_resid_post")]
    assert_close(block[0] + block[1] + block[2], block[3], **TOL)
    # and the MLP read the block's input, not the stream after attention
    with torch.no_grad():
        mlp_in = ours.model.blocks[0].ln2(block[0])
        assert_close(ours.model.blocks[0].mlp(mlp_in), block[2], **TOL)


def test_phi3_fused_weights_split_into_heads_and_gates():
    ours, hf = tiny_decoders.loaded("phi3")
    layer = hf.model.layers[0]
    d_q = ours.cfg.n_heads * ours.cfg.d_head
    w_q = layer.self_attn.qkv_proj.weight[:d_q]  # [head*d_head, d_model]
    attn = ours.model.blocks[0].attn
    assert_close(attn.W_Q[1], w_q[ours.cfg.d_head:2 * ours.cfg.d_head].T, atol=0, rtol=0)
    gate = layer.mlp.gate_up_proj.weight[: ours.cfg.d_mlp]
    assert_close(ours.model.blocks[0].mlp.W_gate.weight, gate, atol=0, rtol=0)
    assert ours.cfg.rotary_dim == 6 and ours.cfg.sliding_window == tiny_decoders.WINDOW


def test_gpt_neo_attention_is_unscaled_and_local_layers_have_a_window():
    ours, _ = tiny_decoders.loaded("gpt_neo")
    assert ours.cfg.layer_types == ("full", "sliding", "sliding")
    trace = ours.run(ONE)
    scores = trace.cache["blocks.0.attn.hook_scores"]
    qk = trace.cache["blocks.0.attn.hook_qk"]
    allowed = scores > -1e30
    assert torch.equal(scores[allowed], qk[allowed])  # no 1/sqrt(d_head)
    n, window = trace.n_tokens, ours.cfg.sliding_window
    pattern = trace.cache["blocks.1.attn.hook_pattern"][0]  # [head, q, k]
    assert torch.count_nonzero(pattern[:, n - 1, : n - window]) == 0
    assert torch.count_nonzero(trace.cache["blocks.0.attn.hook_pattern"][0][:, n - 1,
                                                                           : n - window]) > 0


def test_opt_numbers_positions_from_two():
    ours, hf = tiny_decoders.loaded("opt")
    trace = ours.run(TWO)
    w_pos = ours.model.embed.W_pos.weight
    real = int(trace.attention_mask[0].sum())
    expected = torch.ones(trace.n_tokens, dtype=torch.long)  # padding: row 1, as HF
    expected[:real] = torch.arange(2, 2 + real)
    assert_close(trace.cache["embed.hook_pos"][0], w_pos[expected], atol=0, rtol=0)
