"""Figures that fit where Streamlit shows them: subtitles wrapped to the figure's width (never
wider than an 800 px page holds), the all-heads grid as wide as its thumbnails, training
snapshots whose labels keep apart when the page narrows them."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from viz.attention import head_overview
from viz.style import (FULL_PAGE_PX, SUBTITLE_CHAR_PX, SUBTITLE_CHARS, label_px, subtitle_block,
                       titled_layout, wrap_lines)
from viz.training import snapshot_grid


def test_subtitle_lines_follow_the_figures_width_and_leave_no_orphan_word():
    text = ("each row is scaled to its own largest value so that faint heads still show, and "
            "the hover gives the real value of every square")
    half = wrap_lines(text)
    assert max(map(len, half)) <= SUBTITLE_CHARS
    wide, _ = subtitle_block(text, figure_px=FULL_PAGE_PX)
    wide_lines = wide.split("<br>")
    assert len(wide_lines) < len(half)
    assert max(map(len, wide_lines)) * SUBTITLE_CHAR_PX <= FULL_PAGE_PX - 40
    # titled_layout reads the figure's own width when it has one; a wider figure still gets
    # lines that fit an 800 px screen, where Streamlit narrows it to the page
    fig = titled_layout(go.Figure(), "t", text, width=FULL_PAGE_PX)
    assert fig.layout.title.subtitle.text == wide
    assert subtitle_block(text, figure_px=1200) == subtitle_block(text, figure_px=FULL_PAGE_PX)
    # a clause that only just spills over is balanced across its lines, not one word alone
    lines = wrap_lines("each curve is one sine and cosine pair of the table, at dimension 2i")
    assert len(lines) == 2 and min(map(len, lines)) >= 20
    assert wrap_lines("") == [""]


def test_overview_is_as_wide_as_its_grid_so_the_colour_bar_sits_beside_it():
    for shape in [(6, 12, 13, 13), (2, 4, 24, 24), (6, 12, 325, 325)]:
        a = np.random.default_rng(0).random(shape).astype(np.float32)
        fig = head_overview(a / a.sum(-1, keepdims=True))
        lay = fig.layout
        plot_w = lay.width - lay.margin.l - lay.margin.r
        plot_h = lay.height - lay.margin.t - lay.margin.b
        x0, x1 = lay.xaxis.range
        y1, y0 = lay.yaxis.range  # reversed: layer 0 at the top
        # square data units (scaleanchor) fill the plot exactly: no empty band before the bar
        assert plot_w / plot_h == pytest.approx((x1 - x0) / (y1 - y0), rel=0.02)


def test_snapshot_labels_never_touch_when_an_800_px_page_narrows_the_grid():
    """The induction task's 24 characters, 4 heads in two columns: the figure is wider than
    the page on an 800 px screen, where Streamlit narrows it; the key labels thin out so that
    neighbours keep apart there, and every cell keeps its hover."""
    tokens = list("k3bq9xw7mf2tk3bq9xw7mf2t")
    fig = snapshot_grid(np.tile(np.eye(24, dtype=np.float32), (4, 1, 1)), tokens, tokens, "t")
    lay = fig.layout
    assert lay.width > FULL_PAGE_PX  # the case: it will be narrowed
    plot_px = (lay.xaxis.domain[1] - lay.xaxis.domain[0]) * (
        FULL_PAGE_PX - lay.margin.l - lay.margin.r)
    gap_px = plot_px / 24 * (lay.xaxis.tickvals[1] - lay.xaxis.tickvals[0])
    assert gap_px >= max(label_px(t) for t in lay.xaxis.ticktext) + 4
    assert lay.xaxis.ticktext == tuple(tokens[i] for i in lay.xaxis.tickvals)
    assert len(fig.data[0].customdata) == 24 and len(fig.data[0].customdata[0]) == 24
