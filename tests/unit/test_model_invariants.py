"""Invariants every attention pattern must satisfy, for every family, on a padded batch:
rows sum to 1, causal rows are exactly zero above the diagonal, padding keys get exactly zero."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

TEXTS = ["He hates pineapple pizza.", "Transformers stack layers of attention and MLPs."]
FAMILIES = ["bert", "roberta", "gpt2", "llama"]


@pytest.fixture(scope="module")
def traces(tiny_models_loaded, minilm):
    runs = {family: tiny_models_loaded[family].run(TEXTS) for family in FAMILIES}
    runs["minilm"] = minilm.run(TEXTS)
    return runs


def patterns(trace) -> torch.Tensor:
    return trace.attentions  # [batch, layer, head, q_pos, k_pos]


@pytest.mark.parametrize("family", FAMILIES + ["minilm"])
def test_every_row_sums_to_one(traces, family):
    a = patterns(traces[family])
    assert a.shape[-1] == a.shape[-2] == traces[family].n_tokens
    assert (a >= 0).all()
    # 1e-6: a float32 softmax row of < 20 terms sums to 1 within a few ulps (6e-8 each).
    assert_close(a.sum(-1), torch.ones(a.shape[:-1]), atol=1e-6, rtol=0)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_causal_rows_are_exactly_zero_above_the_diagonal(traces, family):
    a = patterns(traces[family])
    n = a.shape[-1]
    above = torch.ones(n, n, dtype=torch.bool).triu(1)  # [q_pos, k_pos], keys after the query
    assert torch.count_nonzero(a[..., above]) == 0
    assert (a[..., ~above] > 0).any()  # and the allowed part is not trivially empty
    assert torch.equal(a[..., 0, 0], torch.ones_like(a[..., 0, 0]))  # token 0 sees only itself


@pytest.mark.parametrize("family", ["bert", "roberta", "minilm"])
def test_encoders_attend_in_both_directions(traces, family):
    a = patterns(traces[family])
    n = a.shape[-1]
    above = torch.ones(n, n, dtype=torch.bool).triu(1)
    assert (a[1][..., above] > 0).all()  # item 1 is unpadded: every later key is seen


@pytest.mark.parametrize("family", FAMILIES + ["minilm"])
def test_padding_keys_get_exactly_zero_attention(traces, family):
    trace = traces[family]
    mask = trace.attention_mask  # [batch, k_pos]
    assert (mask == 0).any(), "the batch must contain padding for this test to mean anything"
    a = patterns(trace)
    for item in range(a.shape[0]):
        assert torch.count_nonzero(a[item][..., mask[item] == 0]) == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_trace_tensors_are_ordinary_cpu_float_tensors(traces, tiny_models_loaded, family):
    """Users edit these and multiply them by weights: they must not be inference-mode tensors."""
    trace = traces[family]
    for name, x in trace.cache.items():
        assert x.device.type == "cpu" and x.dtype == torch.float32, name
        assert not x.is_inference() and not x.requires_grad, name
    z = trace.cache["blocks.0.attn.hook_z"]  # [batch, head, q_pos, d_head]
    w_o = tiny_models_loaded[family].model.blocks[0].attn.W_O  # [head, d_head, d_model]
    per_head = torch.einsum("bhqd,hdm->bhqm", z, w_o)  # [batch, head, q_pos, d_model]
    b_o = tiny_models_loaded[family].model.blocks[0].attn.b_O
    total = per_head.sum(1) + (0 if b_o is None else b_o)  # [batch, q_pos, d_model]
    # 1e-5: the same products summed per head first; only float32 summation order differs.
    assert_close(total, trace.cache["blocks.0.hook_attn_out"], atol=1e-5, rtol=1e-5)
