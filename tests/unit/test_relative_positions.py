"""T5's relative position bias: the bucket rule against Hugging Face's own, the bias by
distance (analysis/positions.py) against HF's compute_bias, and its figure (viz/positions.py)."""

from __future__ import annotations

import pytest
import torch

import tiny_seq2seq
from analysis.positions import relative_bias
from model.seq2seq_stacks import relative_bucket
from viz.positions import relative_bias_figure


@pytest.mark.parametrize("n_buckets,max_distance", [(32, 128), (12, 20), (8, 9)])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_buckets_are_hf_buckets(n_buckets, max_distance, bidirectional):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-400, 401)[None, :] - torch.zeros(3, 1, dtype=torch.long)
    ours = relative_bucket(rel, bidirectional, n_buckets, max_distance)
    theirs = T5Attention._relative_position_bucket(rel, bidirectional, n_buckets, max_distance)
    assert torch.equal(ours, theirs)
    assert int(ours.max()) == n_buckets - 1 and int(ours.min()) == 0


@pytest.mark.parametrize("decoder", [False, True])
@pytest.mark.parametrize("family", ["t5", "t5_gated"])
def test_bias_by_distance_is_hfs_bias(family, decoder):
    ours, hf = tiny_seq2seq.loaded(family)
    distances, bias = relative_bias(ours.model, decoder=decoder)
    span = 20  # the tiny config's relative_attention_max_distance
    assert distances.tolist() == list(range(-span, 1 if decoder else span + 1))
    assert bias.shape == (5, len(distances))
    stack = hf.decoder if decoder else hf.encoder
    n = span + 1
    with torch.no_grad():
        table = stack.block[0].layer[0].SelfAttention.compute_bias(n, n)[0]  # [head, q, k]
    for i, d in enumerate(distances.tolist()):
        q, k = (0, d) if d >= 0 else (-d, 0)
        assert torch.equal(bias[:, i], table[:, q, k]), d
    if not decoder:  # before and after differ: the encoder tells the two directions apart
        assert not torch.equal(bias[:, span - 1], bias[:, span + 1])


def test_a_model_without_relative_positions_is_refused():
    ours, _ = tiny_seq2seq.loaded("bart")
    with pytest.raises(ValueError, match="no relative position bias"):
        relative_bias(ours.model)
    t5, _ = tiny_seq2seq.loaded("t5")
    with pytest.raises(ValueError, match="positive"):
        relative_bias(t5.model, max_distance=0)


def test_figure_has_one_row_per_head_and_one_column_per_distance():
    distances = torch.arange(-3, 4)
    bias = torch.randn(5, 7)
    fig = relative_bias_figure(distances, bias, "Bias <b>", "sub")
    heat = fig.data[0]
    assert list(heat.x) == list(range(-3, 4)) and list(heat.y) == list(range(5))
    assert heat.zmin == -heat.zmax and heat.zmax >= float(bias.abs().max()) - 1e-6
    assert "<b>" not in fig.layout.title.text  # the title is escaped
    with pytest.raises(ValueError, match="one column per distance"):
        relative_bias_figure(distances, torch.randn(5, 6), "t")


def test_the_walkthrough_adds_t5s_bias_between_scaling_and_mask():
    """The steps add up: scaled scores + position bias + mask = the masked scores the model
    used (padding and all), and the bias step sits between the two."""
    from analysis.walkthrough import walkthrough

    lm, _ = tiny_seq2seq.loaded("t5")
    trace = lm.run(["I love cats!", "Attention lets every token look at every other token."])
    steps = walkthrough(trace, 1)
    keys = [s.key for s in steps]
    assert keys.index("scale") < keys.index("relative_bias") < keys.index("mask")
    by_key = {s.key: s for s in steps}
    scaled = by_key["scale"].shown[0].tensor  # [batch, head, q, k]
    bias = by_key["relative_bias"].shown[0].tensor  # [1, head, q, k]
    mask, masked = (s.tensor for s in by_key["mask"].shown)
    allowed = (mask == 0).expand_as(masked)
    total = (scaled + bias + mask).expand_as(masked)
    assert torch.allclose(total[allowed], masked[allowed], atol=1e-5)
    assert float(bias.abs().max()) > 0.01  # the bias is there to see
    bart, _ = tiny_seq2seq.loaded("bart")
    assert "relative_bias" not in [s.key for s in walkthrough(bart.run("I love cats!"), 0)]
