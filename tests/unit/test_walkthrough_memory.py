"""The walkthrough's run keeps no q·k and no scores (two thirds of a long text's trace); the
layer shown derives them from the kept q and k with the forward pass's own operations, and
they are the numbers the model computed: the same steps, the same tensors as a full trace."""

from __future__ import annotations

import pytest
import torch

from analysis.walkthrough import keep, walkthrough
from analysis.walkthrough.steps import DERIVED, Walk

TEXTS = (["I love cats!", "He hates pineapple pizza today."], None)  # padded batch of two


@pytest.mark.parametrize("family", ["bert", "roberta", "gpt2", "llama"])
def test_derived_scores_are_the_models_own(family, tiny_models_loaded):
    loaded = tiny_models_loaded[family]
    full = loaded.run(*TEXTS, keep=None)
    light = loaded.run(*TEXTS, keep=keep)
    assert not any(n.endswith(DERIVED) for n in light.cache)
    assert len(light.cache) < len(full.cache)
    walk = Walk(light)
    for layer in range(loaded.cfg.n_layers):
        for hook in DERIVED:
            name = f"blocks.{layer}.{hook}"
            assert walk.has(name)
            torch.testing.assert_close(walk.hook(name), full.cache[name], rtol=0, atol=0)


@pytest.mark.parametrize("family", ["bert", "llama"])
def test_the_steps_show_the_same_tensors(family, tiny_models_loaded):
    loaded = tiny_models_loaded[family]
    full, light = (walkthrough(loaded.run(*TEXTS, keep=k), layer=1) for k in (None, keep))
    assert [s.key for s in light] == [s.key for s in full]
    for a, b in zip(light, full):
        for x, y in zip(a.shown, b.shown):
            assert x.label == y.label and x.source == y.source
            torch.testing.assert_close(x.tensor, y.tensor, rtol=0, atol=0)


def test_a_trace_without_q_cannot_derive_scores(tiny_models_loaded):
    trace = tiny_models_loaded["gpt2"].run("Hello there", keep=lambda n: n.endswith("pattern"))
    walk = Walk(trace)
    assert not walk.has("blocks.0.attn.hook_qk")
    with pytest.raises(ValueError, match="hook_q"):
        walk.hook("blocks.0.attn.hook_qk")


@pytest.mark.parametrize("family", ["mistral", "gemma2", "gpt_neo", "neox"])
def test_derived_scores_follow_windows_scales_and_caps(family):
    """Sliding windows (Mistral, Gemma 2, GPT-Neo), a scale of the family's own (Gemma 2's
    query_pre_attn_scalar, GPT-Neo's none) and Gemma 2's soft cap: still the model's numbers."""
    from tests.tiny_decoders import loaded

    ours, _ = loaded(family)
    full = ours.run(*TEXTS, keep=None)
    walk = Walk(ours.run(*TEXTS, keep=keep))
    for layer in range(ours.cfg.n_layers):
        for hook in DERIVED:
            name = f"blocks.{layer}.{hook}"
            torch.testing.assert_close(walk.hook(name), full.cache[name], rtol=0, atol=1e-6)
