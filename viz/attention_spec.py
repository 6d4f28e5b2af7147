"""One attention matrix as a Vega-Lite heatmap: the start page's example.

The start page is the first thing a visitor sees, and plotly's browser code (4.7 MB) takes
about a second to load and start on a fresh visit; Streamlit's Vega-Lite code is a sixth of
that (bench/bench_coldstart.py, BENCHMARKS.md). Every other page uses the plotly heatmap of
viz/attention.py; this one is drawn to look the same: Viridis from 0 to the matrix's maximum,
square cells sized like `heatmap_size`, rows = queries, "query 3·cat → key 1·the: 0.412" on
hover.

The data sits inside the chart's one layer, not at the top of the spec: Streamlit converts
top-level data to an Arrow table, which imports pandas and pyarrow (~0.3 s on a fresh server).
Labels are plain text here: Vega draws them as text, never as HTML.
"""

from __future__ import annotations

import html

from .labels import axis_labels
from .style import (CHAR_PX, ROOM_FILL_MAX, ROOM_PAGE_PX, ROOM_SCALE, ROWS_ARE_QUERIES,
                    square_plot_px, to_numpy)

FONT = "Source Sans, sans-serif"  # Streamlit's own font: the page's text and the chart match
LEFT_PX, LEGEND_PX = 34, 66  # the y axis title and gaps; the legend (title, bar and ticks)
# Projector mode (`room=True`): text ROOM_SCALE times larger, and the plot as wide as the page
# allows (ROOM_PAGE_PX, as the other pages' figures) but no taller than this, so the chart with
# its title and labels still fits a 768 px high projector screen.
ROOM_SIDE_PX = 640


def _labels(tokens) -> list[str]:
    return [html.unescape(label) for label in axis_labels(tokens)]  # plotly's escapes undone


def _side(n: int, labels: list[str] | None = None, room: bool = False) -> int:
    """The plot's side (px) for n tokens, as the plotly heatmap's, in whole-pixel cells; in
    projector mode as large as the page (less the `labels` and legend) and the screen allow."""
    n = max(n, 1)
    side = n * max(1, round(square_plot_px(n) / n))
    if not room:
        return side
    room_px = ROOM_PAGE_PX - _margins(labels or [], ROOM_SCALE)
    return max(side, int(min(side * ROOM_FILL_MAX, room_px, ROOM_SIDE_PX)))


def _margins(labels: list[str], scale: float) -> int:
    """The chart's width beside the plot: the row labels and axis title, and the legend."""
    return int((LEFT_PX + LEGEND_PX + CHAR_PX * max((len(x) for x in labels), default=1))
               * scale)


def legend_ticks(top: float) -> list[float]:
    """Colour-bar labels from 0 to the largest weight, the top one included (as plotly's)."""
    top = max(top, 1e-9)
    step = next(s for s in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0) if top / s <= 10)
    ticks = [round(k * step, 4) for k in range(int(top / step + 1e-9) + 1)]
    if top - ticks[-1] > step / 2:
        ticks.append(round(top, 2))
    return ticks


def chart_width(tokens, room: bool = False) -> int:
    """The chart's width (px) for square cells: the plot, the row labels and the axis title
    at its left, and the legend at its right (`room`: for projector mode)."""
    labels = _labels(tokens)
    return _side(len(labels), labels, room) + _margins(labels, ROOM_SCALE if room else 1.0)


def attention_heatmap_spec(matrix, tokens, title: str, room: bool = False) -> dict:
    """A Vega-Lite spec of one square attention matrix [pos, pos] (rows = queries, columns =
    keys), labelled with `tokens`. Show it with
    `st.vega_lite_chart(spec, width=chart_width(tokens, room))`: Streamlit narrows it to fit
    a narrower page. `room`: projector mode, its text and plot larger (the page's text grows
    there, and a chart left at its normal size would look smaller beside it)."""
    z = to_numpy(matrix, "matrix", ndim=2)
    labels = _labels(tokens)
    if z.shape != (len(labels), len(labels)):
        raise ValueError(f"matrix must be [len(tokens), len(tokens)] = "
                         f"[{len(labels)}, {len(labels)}], got {list(z.shape)}")
    side = _side(len(labels), labels, room)
    px = (lambda size: round(size * ROOM_SCALE)) if room else (lambda size: size)
    values = [{"q": q, "k": k, "w": round(float(z[i, j]), 6)}
              for i, q in enumerate(labels) for j, k in enumerate(labels)]
    axis = {"labelFontSize": px(12), "titleFontSize": px(13), "labelColor": "#444", "ticks": False,
            "domain": False, "labelPadding": 4}
    scale = {"scheme": "viridis", "domain": [0, max(float(z.max()), 1e-9)]}
    heatmap = {
        "data": {"values": values},
        "mark": {"type": "rect", "strokeWidth": 0.6},
        "transform": [{"calculate": "'query ' + datum.q + ' → key ' + datum.k + ': ' + "
                                    "format(datum.w, '.3f')", "as": "reads"},
                      {"calculate": "datum.w", "as": "edge"}],
        "encoding": {
            "x": {"field": "k", "type": "ordinal", "sort": labels,
                  "axis": {**axis, "title": "key (attended to)", "labelAngle": -60,
                           "labelOverlap": False}},
            "y": {"field": "q", "type": "ordinal", "sort": labels,
                  "axis": {**axis, "title": "query (attending)"}},
            "color": {"field": "w", "type": "quantitative", "scale": scale,
                      "legend": {"title": "weight", "gradientLength": side, "titleFontSize": px(12),
                                 "values": legend_ticks(float(z.max())),
                                 "labelFontSize": px(11), "gradientThickness": px(14)}},
            # each cell's edge in its own colour: no light seams between cells of a
            # fractional width
            # (a field of its own: one field on two channels would merge their legends)
            "stroke": {"field": "edge", "type": "quantitative", "scale": scale, "legend": None},
            "tooltip": {"field": "reads", "type": "nominal"},
        },
    }
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": {"text": title, "subtitle": ROWS_ARE_QUERIES, "anchor": "start",
                  "fontSize": px(14), "subtitleFontSize": px(11), "subtitleColor": "#666",
                  "font": FONT, "subtitleFont": FONT},
        # The plot fills the chart's width (`chart_width`: the plot, the labels, the legend):
        # square cells on a wide screen; on a narrow one the chart, and the cells, get narrower.
        "width": "container", "height": side,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "config": {"font": FONT, "view": {"stroke": None}, "axis": {"grid": False},
                   "scale": {"bandPaddingInner": 0}},
        "layer": [heatmap],
    }
