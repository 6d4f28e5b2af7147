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
from .style import CHAR_PX, ROWS_ARE_QUERIES, square_plot_px, to_numpy

FONT = "Source Sans, sans-serif"  # Streamlit's own font: the page's text and the chart match
LEFT_PX, LEGEND_PX = 34, 66  # the y axis title and gaps; the legend (title, bar and ticks)


def _labels(tokens) -> list[str]:
    return [html.unescape(label) for label in axis_labels(tokens)]  # plotly's escapes undone


def _side(n: int) -> int:
    """The plot's side (px) for n tokens, as the plotly heatmap's, in whole-pixel cells."""
    n = max(n, 1)
    return n * max(1, round(square_plot_px(n) / n))


def legend_ticks(top: float) -> list[float]:
    """Colour-bar labels from 0 to the largest weight, the top one included (as plotly's)."""
    top = max(top, 1e-9)
    step = next(s for s in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0) if top / s <= 10)
    ticks = [round(k * step, 4) for k in range(int(top / step + 1e-9) + 1)]
    if top - ticks[-1] > step / 2:
        ticks.append(round(top, 2))
    return ticks


def chart_width(tokens) -> int:
    """The chart's width (px) for square cells: the plot, the row labels and the axis title
    at its left, and the legend at its right."""
    labels = _labels(tokens)
    return (_side(len(labels)) + LEFT_PX + LEGEND_PX
            + int(CHAR_PX * max((len(x) for x in labels), default=1)))


def attention_heatmap_spec(matrix, tokens, title: str) -> dict:
    """A Vega-Lite spec of one square attention matrix [pos, pos] (rows = queries, columns =
    keys), labelled with `tokens`. Show it with
    `st.vega_lite_chart(spec, width=chart_width(tokens))`: Streamlit narrows it to fit a
    narrower page."""
    z = to_numpy(matrix, "matrix", ndim=2)
    labels = _labels(tokens)
    if z.shape != (len(labels), len(labels)):
        raise ValueError(f"matrix must be [len(tokens), len(tokens)] = "
                         f"[{len(labels)}, {len(labels)}], got {list(z.shape)}")
    side = _side(len(labels))
    values = [{"q": q, "k": k, "w": round(float(z[i, j]), 6)}
              for i, q in enumerate(labels) for j, k in enumerate(labels)]
    axis = {"labelFontSize": 12, "titleFontSize": 13, "labelColor": "#444", "ticks": False,
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
                      "legend": {"title": "weight", "gradientLength": side, "titleFontSize": 12,
                                 "values": legend_ticks(float(z.max())),
                                 "labelFontSize": 11, "gradientThickness": 14}},
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
                  "fontSize": 14, "subtitleFontSize": 11, "subtitleColor": "#666",
                  "font": FONT, "subtitleFont": FONT},
        # The plot fills the chart's width (`chart_width`: the plot, the labels, the legend):
        # square cells on a wide screen; on a narrow one the chart, and the cells, get narrower.
        "width": "container", "height": side,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "config": {"font": FONT, "view": {"stroke": None}, "axis": {"grid": False},
                   "scale": {"bandPaddingInner": 0}},
        "layer": [heatmap],
    }
