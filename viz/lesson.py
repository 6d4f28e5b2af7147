"""Figures for lessons: a heatmap with its values hidden, for "click the cell you expect to be
brightest" questions, and the same figure with the asked row's values shown once answered."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import axis_labels
from .style import (COLORSCALE, FULL_PAGE_PX, TEMPLATE, figure_height, fitted_font_px,
                    label_margins)

HIDDEN, ASKED = "#eeeeee", "#ffd54f"
# The toolbar (about 30 px) sits over the top of the figure: at 800 px a long title runs to the
# right edge, under it, unless the title starts below it.
TITLE_DROP = 36  # px from the figure's top to the title
TOP = 100  # the top margin: the dropped title and its subtitle
MAX_WRITTEN = 24  # more keys than this: the squares are too small for their numbers
RIGHT = 30  # px, the right margin
# The numbers in the answered row: at least MIN_TEXT_PX on the narrowest plot (the page beside
# the open sidebar on an 800 px screen, FULL_PAGE_PX), at most MAX_TEXT_PX; a 9 px "0%" read
# as 8 px on a projector. "12%" first; if that is too wide, "12" (the subtitle
# says "in %"); if that too is, no numbers (the hover has them).
MIN_TEXT_PX, MAX_TEXT_PX = 12, 14


def blind_heatmap(tokens, row: int, title: str, values=None) -> go.Figure:
    """Every cell the same pale grey, the asked query row highlighted; no value is in the
    figure. Traces: 0 the grid, 1 a transparent scatter over the asked row whose customdata is
    the key's position, so a click in Streamlit's `on_select` names the key.

    Once the learner has answered, `values` (the asked row's attention weights, one per key)
    colours that row on the attention scale (0-1) with each square's share written in it, and
    the hover gives the number; the subtitle says so."""
    labels = axis_labels(tokens)
    n = len(labels)
    if not 0 <= row < n:
        raise ValueError(f"row must be in [0, {n - 1}], got {row}")
    z = np.zeros((n, n), dtype=np.float32)
    z[row] = 1.0
    shown = None if values is None else np.asarray(values, dtype=np.float64).reshape(-1)
    if shown is not None and shown.shape != (n,):
        raise ValueError(f"values must hold one weight per key ({n}), got {shown.shape}")
    ticks = dict(tickmode="array", tickvals=list(range(n)), ticktext=labels, showgrid=False,
                 zeroline=False, range=[-0.5, n - 0.5])
    fig = go.Figure([
        go.Heatmap(z=z, colorscale=[[0, HIDDEN], [1, ASKED]], zmin=0, zmax=1, showscale=False,
                   xgap=1, ygap=1, hoverinfo="skip"),
        go.Scatter(x=list(range(n)), y=[row] * n, mode="markers", customdata=list(range(n)),
                   text=labels, showlegend=False,
                   marker=dict(symbol="square", size=max(8, min(28, 520 // n)),
                               color="rgba(0,0,0,0)"),
                   selected=dict(marker=dict(color="rgba(33,33,33,0.45)")),
                   unselected=dict(marker=dict(opacity=0)),
                   hovertemplate=f"{html.escape(labels[row], quote=False)} → %{{text}}: "
                                 "click to answer<extra></extra>"),
    ])
    subtitle = "values hidden until you answer"
    height = figure_height(n, low=560, high=900)
    margins = label_margins(labels, labels, 60)
    if shown is not None:
        # square cells: the smaller of the plot's width and height on the narrowest screen
        side = min(FULL_PAGE_PX - margins["l"] - RIGHT, height - TOP - margins["b"])
        values_trace, unit = _row_values(shown, row, side / n)
        fig.add_trace(values_trace)
        fig.data[1].customdata = [[j, float(shown[j])] for j in range(n)]
        fig.data[1].hovertemplate = (f"{html.escape(labels[row], quote=False)} → %{{text}}: "
                                     "%{customdata[1]:.0%}<extra></extra>")
        subtitle = ("the row's real values" + (", in %" if unit == "" else "")
                    + ": the brighter, the more attention"
                    + (" (hover a square for its number)" if unit is None else ""))
    fig.update_layout(
        template=TEMPLATE, height=height, clickmode="event+select",
        dragmode=False, hovermode="closest",
        margin=dict(r=RIGHT, t=TOP, **margins),
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=subtitle),
                   yref="container", y=1, yanchor="top", pad=dict(t=TITLE_DROP)),
        xaxis=dict(title=dict(text="key (attended to)"), tickangle=-60, constrain="domain",
                   **ticks),
        yaxis=dict(title=dict(text="query (attending)"), scaleanchor="x", constrain="domain",
                   **{**ticks, "range": [n - 0.5, -0.5]}),
    )
    return fig


def _row_values(values: np.ndarray, row: int, cell_px: float) -> tuple[go.Heatmap, str | None]:
    """The asked row's weights, on the attention colour scale, each square labelled in a
    readable size when its number fits a cell `cell_px` wide; and the unit written in the
    squares ("%", "" when the sign did not fit, None when no number is written)."""
    n = len(values)
    z = np.full((n, n), np.nan)
    z[row] = values
    text = np.full((n, n), "", dtype=object)
    size, unit = MAX_TEXT_PX, None
    for sign in ("%", ""):
        written = [f"{round(100 * float(v)):.0f}{sign}" for v in values]
        fit = int(fitted_font_px(cell_px - 1, max(len(w) for w in written)))
        if n <= MAX_WRITTEN and fit >= MIN_TEXT_PX:
            text[row], size, unit = written, min(MAX_TEXT_PX, fit), sign
            break
    return go.Heatmap(z=z, colorscale=COLORSCALE, zmin=0, zmax=1, xgap=1, ygap=1,
                      text=text, texttemplate="%{text}", textfont=dict(size=size),
                      hoverinfo="skip", showscale=False), unit  # no colour bar: same size


def clicked_key(points) -> int | None:
    """The key position of the first clicked cell of a `blind_heatmap`, or None."""
    for point in points or []:
        custom = point.get("customdata")
        if isinstance(custom, (int, float)):
            return int(custom)
        if isinstance(custom, (list, tuple)) and custom:
            return int(custom[0])
        if point.get("curve_number", 1) == 1 and point.get("point_index") is not None:
            return int(point["point_index"])
    return None
