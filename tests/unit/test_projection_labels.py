"""The scatter plots' label thinning (viz/point_labels.py): kept labels never overlap at the
assumed plot size, outliers are named first, and every point is still named on hover in both
figures of the embeddings page, for a short sentence and a long text."""

from __future__ import annotations

import numpy as np
import pytest

from viz.point_labels import (
    GAP_PX, LIFT_PX, LINE_PX, MARKER_PX, MAX_LABELS, spread_labels, text_px,
)
from viz.projection import (
    PROJECTION_PLOT_PX, QK_PLOT_PX, joint_qk_figure, projection_figure,
)

SHORT = "[CLS] the cat sat on the mat because it was warm . [SEP]".split()  # 13 tokens


def _labels(n: int) -> list[str]:
    words = ["the", "lighthouse", "keeper", "&lt;sea&gt;", "climbed", "a", "ship"]
    return [f"{i}·{words[i % len(words)]}" for i in range(n)]


def _apart(coords, labels, keep, plot_px) -> None:
    """Every two kept labels are apart on screen: side by side or one above the other."""
    c = np.asarray(coords, dtype=float)
    low, high = c.min(axis=0), c.max(axis=0)
    px = (c - low) / np.where(high > low, high - low, 1.0) * np.asarray(plot_px)
    kept = np.flatnonzero(keep)
    for a in kept:
        for b in kept[kept > a]:
            side = abs(px[a, 0] - px[b, 0]) >= (text_px(labels[a]) + text_px(labels[b])) / 2
            above = (np.abs(px[a, 1:] - px[b, 1:]) >= LINE_PX + GAP_PX).any()
            assert side or above, (labels[a], labels[b], px[a], px[b])
    if c.shape[1] == 2:  # and no label hides another point's marker
        for a in kept:
            dx = np.abs(px[:, 0] - px[a, 0]) < text_px(labels[a]) / 2 + MARKER_PX
            dy = np.abs(px[:, 1] - px[a, 1] - LIFT_PX) < LINE_PX / 2 + MARKER_PX
            covered = np.flatnonzero(dx & dy & (np.abs(px - px[a]).sum(axis=1) > 0))
            assert covered.size == 0, (labels[a], [labels[j] for j in covered])


def _clustered(n: int, seed: int) -> np.ndarray:
    """A dense cluster (where labels once piled into a blob) plus a few far points."""
    rng = np.random.default_rng(seed)
    c = rng.normal(scale=0.05, size=(n, 2))  # [point, 2]
    c[: max(2, n // 6)] = rng.normal(scale=3.0, size=(max(2, n // 6), 2))
    return c


@pytest.mark.parametrize("n, seed", [(13, 0), (13, 1), (325, 2), (1500, 3)])
def test_kept_labels_are_pairwise_apart(n, seed):
    coords, labels = _clustered(n, seed), _labels(n)
    keep = spread_labels(coords, labels, PROJECTION_PLOT_PX[:2])
    assert 1 <= keep.sum() <= min(n, MAX_LABELS)
    _apart(coords, labels, keep, PROJECTION_PLOT_PX[:2])
    # the blob keeps a few labels, not all of them (it is what the rule is for)
    assert keep.sum() < n if n > 13 else keep[n // 6:].sum() < n - n // 6


def test_outliers_first_and_a_pile_of_equal_points_gets_one_label():
    coords = np.zeros((10, 2))
    coords[7] = [5.0, 5.0]  # one point far from the others
    keep = spread_labels(coords, _labels(10))
    assert keep[7] and keep.sum() == 2  # the outlier, and one of the nine on top of each other
    assert not spread_labels(np.zeros((0, 2)), []).any()
    assert spread_labels(np.array([[1.0, 2.0]]), ["0·a"]).tolist() == [True]
    three_d = spread_labels(np.random.default_rng(5).normal(size=(40, 3)), _labels(40),
                            PROJECTION_PLOT_PX)
    assert 1 <= three_d.sum() < 40
    with pytest.raises(ValueError):
        spread_labels(np.zeros((3, 2)), ["a", "b"])


def test_escaped_labels_are_measured_as_shown():
    assert text_px("&lt;s&gt;") == pytest.approx(text_px("<s>"))
    assert text_px("lighthouse") > text_px("a")


def _hover_names(trace) -> list[str]:
    data = trace.customdata
    return [row[0] if isinstance(row, (list, tuple, np.ndarray)) else row for row in data]


@pytest.mark.parametrize("n", [13, 325])
def test_projection_figure_names_every_point_on_hover_and_spreads_its_labels(n):
    coords, labels = _clustered(n, 7), _labels(n) if n > 13 else [f"{i}·{t}" for i, t in
                                                                    enumerate(SHORT)]
    for categorical, color in ((False, np.arange(n)), (True, [lab[-3:] for lab in labels])):
        fig = projection_figure(coords, labels, color, "c", "t", categorical=categorical)
        text, hover = [], []
        for trace in fig.data:
            text += list(trace.text)
            hover += _hover_names(trace)
            assert "customdata" in trace.hovertemplate
        assert sorted(hover) == sorted(labels)  # every point keeps its name on hover
        shown = [t for t in text if t]
        assert 0 < len(shown) <= min(n, MAX_LABELS)
        if n > 13:
            assert len(shown) < n
        keep = np.array([lab in shown for lab in labels])
        _apart(coords, labels, keep, PROJECTION_PLOT_PX[:2])


@pytest.mark.parametrize("n", [13, 325])
def test_joint_figure_spreads_labels_over_queries_and_keys_together(n):
    labels = [f"{i}·{t}" for i, t in enumerate(SHORT)] if n == 13 else _labels(n)
    rng = np.random.default_rng(n)
    q, k = rng.normal(scale=0.1, size=(n, 2)), rng.normal(scale=0.1, size=(n, 2)) + 0.3
    q[0], k[1] = [-4.0, 3.0], [5.0, -2.0]  # two outliers: both keep their labels
    top = rng.integers(0, n, size=n)
    fig = joint_qk_figure(q, k, top, labels, "t")
    queries, keys = fig.data[1], fig.data[2]
    assert queries.text[0] == labels[0] and keys.text[1] == labels[1]
    assert _hover_names(queries) == labels and _hover_names(keys) == labels
    assert [row[1] for row in queries.customdata] == [labels[j] for j in top]
    keep = np.array([bool(t) for t in list(queries.text) + list(keys.text)])
    assert keep.sum() < 2 * n  # the pile near the centre loses most of its labels
    _apart(np.vstack([q, k]), labels + labels, keep, QK_PLOT_PX)
    assert all("<" not in t for t in keys.text)  # labels stay escaped in the figure


def test_legend_lists_categories_in_reading_order():
    """Sentences 1, 2, 3 (not by how many tokens each has); the rare ones pooled last."""
    sentences = ["sentence 1"] * 2 + ["sentence 2"] * 5 + ["sentence 3"] * 3
    coords = np.random.default_rng(9).normal(size=(len(sentences), 2))
    fig = projection_figure(coords, _labels(len(sentences)), sentences, "sentence", "t",
                            categorical=True)
    assert [t.name for t in fig.data] == ["sentence 1", "sentence 2", "sentence 3"]


def test_lengths_legend_sits_right_under_the_tick_labels():
    """Short character ticks ("10·a") once left a ~70 px empty band between the bar
    chart's ticks and its legend (a fixed 150 px bottom margin). The margin now is the longest
    label's slanted drop plus the legend's rows: small for short ticks, larger for long ones,
    so the legend neither floats far below nor covers a label."""
    import math

    from viz.projection import LEGEND_GAP_PX, LEGEND_ROW_PX, TICK_ANGLE, norms_figure, tick_drop
    from viz.style import label_px

    norms = {name: np.ones(23) for name in ("token", "position", "sum")}
    short = [f"{i}·{c}" for i, c in enumerate("The cat sat on the mat.")]
    fig = norms_figure(norms, short, "t")
    bottom = fig.layout.margin.b
    drop = max(map(label_px, short)) * math.sin(math.radians(TICK_ANGLE))
    assert drop + LEGEND_ROW_PX <= bottom <= drop + 80  # was 150: an empty band of ~70 px
    # the legend hangs from the labels (a spare row, if any, is left under it, not above it)
    legend, plot_px = fig.layout.legend, fig.layout.height - fig.layout.margin.t - bottom
    assert legend.yref == "paper" and legend.yanchor == "top"
    assert fig.layout.xaxis.automargin is False
    assert -legend.y * plot_px == pytest.approx(tick_drop(short) + LEGEND_GAP_PX)
    assert LEGEND_GAP_PX <= 20
    long = [f"{i}·extraordinarily{i}" for i in range(23)]
    long_bottom = norms_figure(norms, long, "t").layout.margin.b
    assert long_bottom >= max(map(label_px, long)) * math.sin(math.radians(TICK_ANGLE)) \
        + LEGEND_ROW_PX
    # five legend entries wrap on an 800 px screen: room for two rows
    five = dict(norms, **{"token type": np.ones(23), "after LayerNorm": np.ones(23)})
    assert norms_figure(five, short, "t").layout.margin.b >= bottom + LEGEND_ROW_PX
