"""The forward-pass walkthrough for DistilBERT and ELECTRA: the steps each has, and every
width named on screen is the tensor's real width (ELECTRA's embeddings are narrower than the
model, and a step shows them widened)."""

from __future__ import annotations

import pytest

import tiny_encoders
from analysis.walkthrough import walkthrough
from model import load_model

ENCODER = ["tokens", "attention_mask", "token_types", "embed_tok", "embed_type", "embed_pos",
           "embed_sum", "embed_norm", "layer_input", "qkv_proj", "split_heads", "k_transpose",
           "scores", "scale", "mask", "softmax", "weighted_values", "join_heads", "attn_out",
           "add_norm_attn", "mlp_up", "mlp_act", "mlp_down", "add_norm_mlp", "stack", "output"]
ELECTRA = ENCODER[:ENCODER.index("layer_input")] + ["embed_project"] + \
    ENCODER[ENCODER.index("layer_input"):]
DISTILBERT = [k for k in ENCODER if k not in ("token_types", "embed_type")]  # no segments


@pytest.mark.parametrize("family, order", [("electra", ELECTRA), ("distilbert", DISTILBERT)])
def test_steps_and_every_width_on_screen(tmp_path, family, order):
    loaded = load_model(str(tiny_encoders.BUILDERS[family](tmp_path / family)))
    trace = loaded.run("The cat sat on the mat.", keep=None)
    steps = walkthrough(trace, 1)
    assert [s.key for s in steps] == order
    cfg = trace.cfg
    widths = {"d_model": cfg.d_model, "d_embed": cfg.d_embed}
    named = set()
    for step in steps:
        for shown in step.shown:
            assert len(shown.dims) == len(shown.shape), (step.key, shown.label)
            for dim, size in zip(shown.dims, shown.shape):
                if dim in widths:
                    named.add(dim)
                    assert size == widths[dim], (step.key, shown.label, dim, size)
    assert named == ({"d_model", "d_embed"} if family == "electra" else {"d_model"})
    if family == "electra":
        project = next(s for s in steps if s.key == "embed_project")
        assert "20 numbers" in project.summary and "36 numbers" in project.summary
        tok = next(s for s in steps if s.key == "embed_tok")
        assert "a learned vector of 20 numbers" in tok.summary
