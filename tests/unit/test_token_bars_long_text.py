"""The ablation page's per-token bars on a long text (325 tokens): too many bars to label each,
so the largest ones are labelled, never close enough for their slanted labels to touch, and
the subtitle says which bars carry a label. A short text keeps every label."""

from __future__ import annotations

import numpy as np

from viz.heads import BARS_NAMED, largest_apart, token_bars


def test_a_long_text_labels_its_largest_bars_apart():
    rng = np.random.default_rng(0)
    values = rng.random(325) * 0.05
    values[[40, 41, 200]] = [0.9, 0.8, -1.0]  # two neighbours: only the larger is named
    tokens = [f"w{i}" for i in range(325)]
    fig = token_bars(tokens, values, "How far each token turned", "1 − cosine")
    ticks = list(fig.layout.xaxis.tickvals)
    assert fig.layout.xaxis.showticklabels is not False
    assert 0 < len(ticks) <= BARS_NAMED
    assert "40·w40" in ticks and "200·w200" in ticks and "41·w41" not in ticks
    positions = [int(t.split("·")[0]) for t in ticks]
    assert min(np.diff(positions)) >= 325 * 16 / 408  # a slanted label's room, 408 px plot
    assert "labelled: the" in fig.layout.title.subtitle.text


def test_a_short_text_keeps_every_label():
    fig = token_bars(["a", "b", "c"], [0.1, 0.2, 0.3], "t", "v")
    assert fig.layout.xaxis.tickvals is None and "labelled" not in (
        fig.layout.title.subtitle.text or "")


def test_nan_bars_are_never_named():
    values = np.full(200, np.nan)
    values[10] = 0.5
    assert largest_apart(values) == [10]
