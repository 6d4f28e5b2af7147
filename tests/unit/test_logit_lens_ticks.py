"""The logit lens's column labels on an 800 px screen: on the narrowest plot, neighbouring
labels never touch (as "18·␣19·m20·a" would): horizontal ones are at least their width apart,
slanted ones at least their two lines' height apart; thinned, never all gone."""

from __future__ import annotations

import html
import math

import numpy as np
import pytest

from viz.lens import NARROW_PLOT_PX, lens_table

CHAR_PX, LINE_PX = 0.6 * 13, 13  # 13 px text: a character about 0.6 of it wide


def _table(tokens):
    n = len(tokens)
    top = [[[t] for t in tokens] for _ in range(2)]
    probs = np.full((2, n, 1), 0.5)
    rank = np.ones((2, n), dtype=np.int64)
    rank[:, -1] = 0
    nxt = list(tokens[1:]) + [""]
    return lens_table(["embeddings", "after layer 0"], tokens, top, probs, nxt, rank,
                      np.full((2, n), 0.5), first_position=11)


@pytest.mark.parametrize("tokens", [
    list("on the mat. "),  # tiny-chars, 12 columns
    list("The old lighthouse keeper climbed the stairs every"),  # 50 characters
    ["Ġthe", "Ġlighthouse", "Ġkeeper", "Ġclimbed"] * 8,  # 32 word tokens
])
def test_neighbouring_column_labels_do_not_touch_on_the_narrowest_plot(tokens):
    fig = _table(tokens)
    axis = fig.layout.xaxis
    columns = list(fig.data[0].x)
    shown = [columns.index(v) for v in axis.tickvals]
    assert shown and shown == sorted(shown)
    cell = NARROW_PLOT_PX / len(tokens)
    lines = [html.unescape(t).split("<br>") for t in axis.ticktext]
    angle = abs(axis.tickangle or 0)
    for (a, b), text in zip(zip(shown, shown[1:]), lines):
        apart = (b - a) * cell
        if angle == 0:
            assert apart >= max(len(p) for p in text) * CHAR_PX + 2, (text, apart)
        else:
            assert apart * math.sin(math.radians(angle)) >= len(text) * LINE_PX + 2
    assert len(shown) >= min(len(tokens), 6)  # thinned, not gone


def test_a_few_columns_keep_every_label():
    fig = _table(list("on a"))
    assert len(fig.layout.xaxis.tickvals) == 4 and fig.layout.xaxis.tickangle == 0


def test_the_opening_window_uses_the_measured_width_of_a_wide_page():
    """At 1400 px the lens opened on 9 positions with 85 px cells: the window was chosen for
    the narrowest page (800 px). Measured, the page's width opens more positions, each still
    labelled with its token and true next token."""
    from app_pages.logit_lens import DEFAULT_WIDTH, lens_plot_px
    from viz.lens import NARROW_PLOT_PX, labelled_width, tick_layout

    tokens = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "because", "it", "was",
              "warm", ".", "[SEP]"]
    narrow = labelled_width(tokens, 0, DEFAULT_WIDTH)
    assert lens_plot_px(None, False) == NARROW_PLOT_PX  # not measured yet: the narrowest
    wide_px = lens_plot_px(904, False)  # the main column at 1400 px, sidebar open
    wide = labelled_width(tokens, 0, DEFAULT_WIDTH, wide_px)
    assert narrow < wide == DEFAULT_WIDTH
    assert lens_plot_px(976, True) < lens_plot_px(976, False)  # projector: larger labels
    labels = [f"{i}·{t}<br>→ {n}" for i, (t, n) in enumerate(zip(tokens, tokens[1:]))]
    assert len(tick_layout(labels[:wide], wide, wide_px / wide)[1]) == wide  # all labelled
