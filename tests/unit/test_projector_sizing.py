"""Projector mode's sizing rules: a page's main figure grows to fill the room screen's page with
square cells, a half-page figure grows but stays within its column, and a heatmap's tick labels
are as large as their cells allow and never closer than a label's height."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ui import projector
from viz.attention import attention_heatmap
from viz.style import (HALF_PAGE_PX, LABEL_EM, ROOM_FILL_MAX, ROOM_NARROW_PX, ROOM_PAGE_PX,
                       ROOM_SCALE, room_size, room_ticks)

MARGIN = dict(l=110, r=100, t=80, b=120)


def _plot(size: dict) -> tuple[float, float]:
    m = size["margin"]
    return size["width"] - m["l"] - m["r"], size["height"] - m["t"] - m["b"]


def test_a_main_figure_fills_the_room_page_with_square_cells():
    size = room_size(630, 620, MARGIN)  # a 420 px plot: the main heatmap of a short sentence
    w, h = _plot(size)
    assert size["width"] == pytest.approx(ROOM_PAGE_PX, abs=1)
    assert w == pytest.approx(h, abs=1) and w > 420 * ROOM_SCALE
    assert size["margin"] == {side: int(v * ROOM_SCALE) for side, v in MARGIN.items()}


def test_a_main_figure_wider_than_the_page_fits_it_with_square_cells():
    size = room_size(1100, 1090, MARGIN)  # an 890 px plot: more than the room page holds
    w, h = _plot(size)
    assert size["width"] == pytest.approx(ROOM_PAGE_PX, abs=1)
    assert w == pytest.approx(h, abs=1) and w > 600


def test_a_main_figure_with_wide_margins_grows_at_most_fill_max():
    size = room_size(HALF_PAGE_PX + 100, 300, dict(l=400, r=60, t=10, b=10))  # a 100 px plot
    assert _plot(size)[0] == pytest.approx(100 * ROOM_FILL_MAX, abs=1)
    assert size["width"] < ROOM_PAGE_PX


def test_a_half_page_figure_grows_by_the_scale_at_most_and_never_shrinks():
    size = room_size(HALF_PAGE_PX, 460, dict(l=60, r=100, t=80, b=80))  # a 300 px plot
    w, h = _plot(size)
    assert 300 <= w <= 300 * ROOM_SCALE + 1 and w == pytest.approx(h, abs=1)
    assert size["width"] <= ROOM_PAGE_PX


@pytest.mark.parametrize("n, plot_px", [(13, 650), (43, 700), (43, 460), (120, 700)])
def test_tick_labels_never_overlap_and_are_never_smaller_than_normal(n, plot_px):
    for angle in (60, 90):
        font, step = room_ticks(n, plot_px, 17.55, 13, angle)
        across = plot_px / n * step * math.sin(math.radians(angle))
        assert 13 <= font <= 17.55
        assert across >= font * LABEL_EM - 1e-9  # neighbouring labels a line height apart
        if step > 1:  # thinned only when even the normal size does not fit every label
            assert font == 13 and plot_px / n * math.sin(math.radians(angle)) < 13 * LABEL_EM


def test_big_cells_get_the_big_font_and_every_label():
    assert room_ticks(13, 650, 17.55, 13, 60) == (17.55, 1)


def test_labels_along_the_axis_need_their_width():
    font, step = room_ticks(20, 400, 17.55, 13, 0, label_px_at_low=45)
    assert step * 400 / 20 >= 45 * font / 13 + 4


def _heatmap(n: int):
    tokens = [f"t{i}" for i in range(n)]
    return attention_heatmap(np.full((n, n), 1 / n), tokens, tokens, causal=False)


@pytest.mark.parametrize("n", [13, 43])
def test_the_enlarged_main_heatmap_is_square_fills_the_page_and_thins_its_labels(n):
    fig = _heatmap(n)
    big = projector.enlarged(fig)
    m = big.layout.margin
    w, h = big.layout.width - m.l - m.r, big.layout.height - m.t - m.b
    assert big.layout.width <= ROOM_PAGE_PX + 1 and w >= 600 and w == pytest.approx(h, abs=2)
    narrow = min(big.layout.width, ROOM_NARROW_PX) - m.l - m.r  # x on an 800 px screen
    for axis, angle, px in ((big.layout.xaxis, 60, narrow), (big.layout.yaxis, 90, h)):
        vals = list(axis.tickvals)
        step = math.ceil(n / len(vals))
        across = px / n * step * math.sin(math.radians(angle))
        assert vals[0].endswith("t0")  # labels start at the first token
        assert across >= axis.tickfont.size * LABEL_EM - 1e-6
        assert axis.tickfont.size >= 13
    assert big.layout.title.subtitle.font.size > 13  # the subtitle is read from the back too
    assert fig.layout.width < big.layout.width and fig.layout.xaxis.tickvals is None  # unchanged


def test_a_zoomed_heatmap_keeps_its_own_labels():
    tokens = [f"t{i}" for i in range(60)]
    fig = attention_heatmap(np.full((60, 60), 1 / 60), tokens, tokens, window=(10, 20))
    big = projector.enlarged(fig)
    assert list(big.layout.xaxis.tickvals) == list(fig.layout.xaxis.tickvals)


def test_a_figure_sized_without_its_own_margins_keeps_the_template_ones():
    import plotly.graph_objects as go

    from viz.style import TEMPLATE

    fig = go.Figure(go.Bar(x=["a"], y=[1]))
    fig.update_layout(template=TEMPLATE, width=600, height=400)  # margins from the template
    big = projector.enlarged(fig)
    drawn = TEMPLATE.layout.margin
    assert big.layout.margin.l == int(drawn.l * ROOM_SCALE)
    assert big.layout.margin.b == int(drawn.b * ROOM_SCALE)


def test_the_difference_map_keeps_its_changed_position_labelled_in_projector_mode():
    """Compare's difference map of 43 characters, zoomed on a change at 5: projector mode
    thinned its x axis to 0, 2, 4, 6 … over all 43 labels and dropped "5·a|o"."""
    from viz.compare import difference_heatmap

    text = "The cat sat on the mat because it was warm."
    a, b = list(text), list(text)
    b[5] = "o"
    rng = np.random.default_rng(0)
    fig = difference_heatmap(rng.random((43, 43)), rng.random((43, 43)), a, b, causal=True)
    big = projector.enlarged(fig)
    for axis in (fig.layout.xaxis, big.layout.xaxis, big.layout.yaxis):
        assert "5·a|o" in axis.tickvals
    shown = [v for v in big.layout.xaxis.tickvals if int(v.split("·")[0]) <= 20]
    assert len(shown) >= 15  # the window 0–20 is labelled densely, not every other token


def test_projector_thinning_counts_only_the_cells_a_zoomed_axis_shows():
    import plotly.graph_objects as go

    from viz.style import TEMPLATE

    labels = [f"{i}·t" for i in range(100)]
    fig = go.Figure(go.Heatmap(z=np.zeros((100, 100)), x=labels, y=labels))
    fig.update_layout(template=TEMPLATE, width=460, height=460,
                      margin=dict(l=60, r=60, t=80, b=60),
                      xaxis=dict(type="category", range=[39.5, 59.5], tickangle=-60),
                      yaxis=dict(type="category", range=[59.5, 39.5]))
    big = projector.enlarged(fig)
    for axis in (big.layout.xaxis, big.layout.yaxis):
        assert axis.tickvals[0] == "40·t" and len(axis.tickvals) == 20  # 20 cells, all named
