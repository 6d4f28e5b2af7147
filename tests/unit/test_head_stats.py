"""Head statistics against hand computations on small constructed attention matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analysis.head_stats import (
    STATISTICS, head_statistics, is_punctuation, pooled_statistics, statistic_totals, trace_totals,
)

TOKENS = ["[CLS]", "hi", "Ġ,", "[SEP]"]
SPECIAL = [1, 0, 0, 1]
EYE = np.eye(4)
UNIFORM = np.full((4, 4), 0.25)
PREVIOUS = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], dtype=float)
MIXED = np.array([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0.25, 0.25, 0.5, 0], [0.1, 0.2, 0.3, 0.4]])
ATTN = np.stack([np.stack([EYE, UNIFORM]), np.stack([PREVIOUS, MIXED])])  # [2, 2, 4, 4]


def h(row) -> float:
    return -sum(p * math.log2(p) for p in row if p > 0)


# (layer, head) -> every statistic, worked out by hand from the matrices above.
EXPECTED = {
    (0, 0): dict(entropy=0, special=0.5, first=0.25, punctuation=0.25, previous=0, self=1,
                 next=0, distance=0),
    # uniform: 2 bits; distances per row (0+1+2+3)/4=1.5, (1+0+1+2)/4=1, 1, 1.5 -> mean 1.25
    (0, 1): dict(entropy=2, special=0.5, first=0.25, punctuation=0.25, previous=0.25,
                 self=0.25, next=0.25, distance=1.25),
    # rows 0 and 1 look at [CLS] (special, first), row 2 at "hi", row 3 at ","
    (1, 0): dict(entropy=0, special=0.5, first=0.5, punctuation=0.25, previous=1, self=0.25,
                 next=0, distance=0.75),
    # special per row: 1, .5, .25, .1+.4 ; first: 1, .5, .25, .1 ; punctuation: 0, 0, .5, .3
    # previous (rows 1-3): .5, .25, .3 ; self: 1, .5, .5, .4
    # distance per row: 0, .5, .25*2+.25*1, .1*3+.2*2+.3*1 = 0, .5, .75, 1.0
    (1, 1): dict(entropy=(0 + 1 + 1.5 + h([0.1, 0.2, 0.3, 0.4])) / 4, special=2.25 / 4,
                 first=1.85 / 4, punctuation=0.8 / 4, previous=1.05 / 3, self=2.4 / 4, next=0,
                 distance=2.25 / 4),
}


def test_statistics_equal_hand_computations():
    stats = head_statistics(ATTN, TOKENS, SPECIAL)
    assert set(stats) == set(STATISTICS)
    for (layer, head), expected in EXPECTED.items():
        for name, value in expected.items():
            assert stats[name][layer, head] == pytest.approx(value, abs=1e-6), (name, layer, head)


def test_entropy_of_a_uniform_row_is_log2_of_its_length():
    # A causal-style row over 3 keys: exactly log2(3) bits.
    a = np.zeros((1, 1, 3, 3))
    a[0, 0, :, :] = [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]]
    stats = head_statistics(a, ["a", "b", "c"], [0, 0, 0])
    assert stats["entropy"][0, 0] == pytest.approx((0 + 1 + math.log2(3)) / 3, abs=1e-6)


def test_padding_is_ignored():
    padded = np.zeros((2, 2, 5, 5))
    padded[..., :4, :4] = ATTN
    padded[..., 4, 0] = 1.0  # whatever the padding row holds must not count
    stats = head_statistics(padded, TOKENS + ["[PAD]"], SPECIAL + [1], [1, 1, 1, 1, 0])
    plain = head_statistics(ATTN, TOKENS, SPECIAL)
    for name in STATISTICS:
        np.testing.assert_allclose(stats[name], plain[name], atol=1e-6, err_msg=name)


def test_pooling_weights_every_row_equally():
    # A second text of 2 tokens where every head attends to itself.
    short = np.broadcast_to(np.eye(2), (2, 2, 2, 2))
    pooled = pooled_statistics([statistic_totals(ATTN, TOKENS, SPECIAL),
                                statistic_totals(short, ["x", "y"], [0, 0])])
    # self for head (0, 1): text 1 rows give 4 × 0.25, text 2 rows give 2 × 1 -> 3 / 6.
    assert pooled["self"][0, 1] == pytest.approx(3 / 6)
    # previous counts rows with a previous token: 3 in text 1 (0.25 each) and 1 in text 2 (0).
    assert pooled["previous"][0, 1] == pytest.approx(0.75 / 4)
    with pytest.raises(ValueError, match="no texts"):
        pooled_statistics([])


def test_one_token_has_no_previous_or_next():
    stats = head_statistics(np.ones((1, 1, 1, 1)), ["solo"], [0])
    assert math.isnan(stats["previous"][0, 0]) and math.isnan(stats["next"][0, 0])
    assert stats["self"][0, 0] == 1


@pytest.mark.parametrize("token, expected", [
    (",", True), ("Ġ.", True), ("##!", True), ("▁?", True), ("\"", True), ("...", True),
    ("cat", False), ("'s", False), ("Ġ", False), ("", False), ("3", False),
])
def test_punctuation(token, expected):
    assert is_punctuation(token) is expected


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="q_pos == k_pos"):
        head_statistics(np.ones((1, 1, 2, 3)), ["a", "b"], [0, 0])
    with pytest.raises(ValueError, match="4 entries"):
        head_statistics(ATTN, TOKENS[:3], SPECIAL)
    with pytest.raises(ValueError, match="right padding"):
        head_statistics(ATTN, TOKENS, SPECIAL, [0, 1, 1, 1])


def test_real_minilm_trace(minilm):
    trace = minilm.run("The cat sat on the mat, and then it slept.")
    stats = head_statistics(trace.attentions, trace.tokens, trace.special_mask[0])
    n = trace.n_tokens
    assert stats["entropy"].shape == (6, 12)
    assert (stats["entropy"] >= 0).all() and (stats["entropy"] <= math.log2(n) + 1e-5).all()
    # An independent numpy computation of two statistics over the whole trace.
    a = trace.attentions.double().numpy()  # [layer, head, q, k]
    np.testing.assert_allclose(stats["self"], np.trace(a, axis1=-2, axis2=-1) / n, atol=1e-6)
    special = trace.special_mask[0].bool().numpy()
    np.testing.assert_allclose(stats["special"], a[..., special].sum(-1).mean(-1), atol=1e-6)
    # Going through the trace's cache gives the same numbers.
    again = trace_totals(trace).means()
    for name in STATISTICS:
        np.testing.assert_allclose(again[name], stats[name], atol=1e-9, equal_nan=True)


def test_trace_totals_of_a_padded_batch_item(minilm):
    batch = minilm.run(["A short one.", "A much longer second sentence with more words in it."])
    alone = minilm.run("A short one.")
    got = trace_totals(batch, item=0).means()
    want = head_statistics(alone.attentions, alone.tokens, alone.special_mask[0])
    for name in STATISTICS:
        # batched vs single runs differ only by float32 summation order
        np.testing.assert_allclose(got[name], want[name], atol=1e-5, err_msg=name)
    assert torch.equal(batch.attention_mask[0].bool(), torch.tensor(
        [True] * alone.n_tokens + [False] * (batch.n_tokens - alone.n_tokens)))


# ------------------------------------------------------------------- the grid figure
def test_head_grid_cells_and_click_targets():
    from viz.heads import head_grid, picked_head

    values = np.arange(6, dtype=float).reshape(2, 3)  # [layer, head]
    fig = head_grid(values, "Entropy <b>", "<i>bits</i>")
    heat, scatter = fig.data
    np.testing.assert_array_equal(np.asarray(heat.z), values)
    # A plain list (numpy would reach the browser as base64 and not come back on a click),
    # layer by layer: point 4 is layer 1, head 1.
    assert scatter.customdata == ([0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2])
    assert list(scatter.text) == [f"{v:.2f}" for v in range(6)]
    assert "&lt;b&gt;" in fig.layout.title.text and "<i>" not in heat.colorbar.title.text
    signed = head_grid(np.array([[-0.5, 0.2]]), "Δ", "Δ", diverging=True).data[0]
    assert (signed.zmin, signed.zmid, signed.zmax) == (-0.5, 0, 0.5)
    assert picked_head([{"customdata": [1, 2]}], 3) == (1, 2)
    assert picked_head([{"curve_number": 1, "point_index": 4}], 3) == (1, 1)
    assert picked_head([], 3) is None
    with pytest.raises(ValueError, match="2 dimensions"):
        head_grid(np.ones(3), "t", "v")
