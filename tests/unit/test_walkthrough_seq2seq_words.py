"""The walkthrough's sentences and formulas follow the model shown, read from its own config:
T5 picks its head size apart from d_model (5 heads of 7 numbers over a 30-wide stream here)
and has no bias on Q, K, V, W_O or the feed-forward maps, and does not scale its scores; BART
has d_head = d_model / heads and biases everywhere. Random-weight folders, tests/tiny_seq2seq.py."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

import tiny_seq2seq  # noqa: E402
from analysis.walkthrough import walkthrough  # noqa: E402

TEXT = "Attention lets every token look."


def _steps(family: str) -> tuple:
    lm, _ = tiny_seq2seq.loaded(family)
    trace = lm.run(TEXT)
    return trace.cfg, {s.key: s for s in walkthrough(trace, 0)}


def _words(step) -> str:
    return " ".join((step.title, step.summary, step.teacher, step.formula))


@pytest.mark.parametrize("family", ["t5", "bart", "marian"])
def test_head_size_and_biases_are_the_models_own(family):
    cfg, steps = _steps(family)
    h, dh, d = cfg.n_heads, cfg.d_head, cfg.d_model
    split, qkv = _words(steps["split_heads"]), _words(steps["qkv_proj"])
    assert f"{h} heads of {dh} numbers" in split or f"{h} heads of {d} / {h} = {dh}" in split
    if h * dh == d:
        assert f"{d} / {h} = {dh}" in split and "d_{model} / H" in split
    else:
        assert "/" not in steps["split_heads"].summary and "d_{model} / H" not in split
        assert f"{h} × {dh} = {h * dh}" in split
    assert f"nn.Linear({d}, {h * dh}" in qkv
    assert ("b_Q" in qkv) == cfg.attn_bias and ("bias=False" in qkv) != cfg.attn_bias
    assert ("b_O" in steps["attn_out"].formula) == cfg.has_out_bias
    for key, bias in (("mlp_up", "b_{\\text{in}}"), ("mlp_down", "b_{\\text{out}}")):
        assert (bias in steps[key].formula) == cfg.mlp_bias, key


def test_t5_is_the_case_that_differs():
    """The check above means something only if the T5 folder really differs from BART."""
    t5, _ = _steps("t5")
    bart, _ = _steps("bart")
    assert t5.n_heads * t5.d_head != t5.d_model and not t5.attn_bias and not t5.mlp_bias
    assert bart.n_heads * bart.d_head == bart.d_model and bart.attn_bias and bart.mlp_bias


def test_t5s_unscaled_scores_are_not_credited_to_another_model():
    _, steps = _steps("t5")
    scale = _words(steps["scale"])
    assert steps["scale"].title == "No scaling" and "GPT-Neo" not in scale and "T5" in scale
    assert "not divided" in steps["relative_bias"].teacher

