"""Shared checks of the decoder parity tests (tests/parity/test_parity_*.py): HF's eager
forward on exactly our token ids and mask, and the comparison of every pattern and state.

Tolerance: atol = rtol = 1e-4 (issue 28's bar). Our forward does HF's float32 operations;
measured differences on these checkpoints are 0 for most families and below 1e-5 for OPT and
Phi-3 (the order of a bias add and a fused split). A swapped pair of heads in one W_Q moves the
patterns by more than 0.05 on every family (each file's negative control), far above it.
"""

from __future__ import annotations

import copy

import torch
from torch.testing import assert_close

from model.hooks import caching_hook, hooks
from tiny_decoders import FINAL_NORMS

TOL = dict(atol=1e-4, rtol=1e-4)
ONE = "Attention lets every token look at every other token."
TWO = ["I love cats!", "Attention lets every token look at every other token."]


def hf_run(hf, family: str, trace):
    """HF's outputs (attentions, hidden states, logits) and the residual before its final norm."""
    captured = {}
    norm = hf.get_submodule(FINAL_NORMS.get(family, "model.norm"))
    handle = norm.register_forward_pre_hook(  # a test's own HF model: ours to hook
        lambda module, args: captured.setdefault("pre_norm", args[0]))
    try:
        with torch.no_grad():
            out = hf(input_ids=trace.input_ids, attention_mask=trace.attention_mask,
                     output_attentions=True, output_hidden_states=True)
    finally:
        handle.remove()
    return out, captured["pre_norm"]


def assert_parity(trace, out, pre_norm, rows: torch.Tensor | None = None) -> None:
    """Every layer's pattern and hidden state, the final vectors and the logits. `rows`
    [batch, pos] (bool), if given, limits the comparison to those query positions."""
    n_layers = trace.cfg.n_layers
    assert len(out.attentions) == n_layers and len(out.hidden_states) == n_layers + 1
    keep = (lambda x: x) if rows is None else (lambda x: x[rows] if x.dim() == 3 else
                                                x.transpose(1, 2)[rows])
    for layer in range(n_layers):
        assert_close(keep(trace.cache[f"blocks.{layer}.attn.hook_pattern"]),
                     keep(out.attentions[layer]), **TOL)
        assert_close(keep(trace.cache[f"blocks.{layer}.hook_resid_pre"]),
                     keep(out.hidden_states[layer]), **TOL)
    assert_close(keep(trace.cache[f"blocks.{n_layers - 1}.hook_resid_post"]), keep(pre_norm),
                 **TOL)
    assert_close(keep(trace.final), keep(out.hidden_states[-1]), **TOL)
    assert_close(keep(trace.logits), keep(out.logits), **TOL)


def swapped_head_pattern(ours, trace) -> torch.Tensor:
    """Layer 0's pattern from a copy of our model whose heads 0 and 1 swapped W_Q."""
    broken = copy.deepcopy(ours.model)
    with torch.no_grad():
        broken.blocks[0].attn.W_Q[[0, 1]] = broken.blocks[0].attn.W_Q[[1, 0]].clone()
    cache = {}
    with torch.no_grad(), hooks(broken.hook_names, [("blocks.0.attn.hook_pattern",
                                                     caching_hook(cache))]):
        broken(trace.input_ids, trace.attention_mask, trace.token_type_ids)
    return cache["blocks.0.attn.hook_pattern"]


def assert_padding_gets_nothing(trace) -> None:
    """In a padded batch, the first text's real queries give its padding keys exactly nothing,
    in every layer (a padding query whose whole window is padding spreads evenly, in HF as here)."""
    real = trace.attention_mask[0] == 1
    for layer in range(trace.cfg.n_layers):
        pattern = trace.cache[f"blocks.{layer}.attn.hook_pattern"]  # [batch, head, q, k]
        assert torch.count_nonzero(pattern[0][:, real][..., ~real]) == 0
