"""Figures for lessons: a heatmap with its values hidden, for "click the cell you expect to be
brightest" questions, and the same figure with the asked row's values shown once answered."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import axis_labels
from .style import COLORSCALE, TEMPLATE, figure_height, label_margins

HIDDEN, ASKED = "#eeeeee", "#ffd54f"
# The toolbar (about 30 px) sits over the top of the figure: at 800 px a long title runs to the
# right edge, under it, unless the title starts below it.
TITLE_DROP = 36  # px from the figure's top to the title
TOP = 100  # the top margin: the dropped title and its subtitle
MAX_WRITTEN = 24  # more keys than this: the squares are too small for their numbers


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
    if shown is not None:
        fig.add_trace(_row_values(shown, row))
        fig.data[1].customdata = [[j, float(shown[j])] for j in range(n)]
        fig.data[1].hovertemplate = (f"{html.escape(labels[row], quote=False)} → %{{text}}: "
                                     "%{customdata[1]:.0%}<extra></extra>")
        subtitle = ("the row's real values: the brighter, the more attention"
                    + ("" if n <= MAX_WRITTEN else " (hover a square for its number)"))
    fig.update_layout(
        template=TEMPLATE, height=figure_height(n, low=560, high=900), clickmode="event+select",
        dragmode=False, hovermode="closest",
        margin=dict(r=30, t=TOP, **label_margins(labels, labels, 60)),
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=subtitle),
                   yref="container", y=1, yanchor="top", pad=dict(t=TITLE_DROP)),
        xaxis=dict(title=dict(text="key (attended to)"), tickangle=-60, constrain="domain",
                   **ticks),
        yaxis=dict(title=dict(text="query (attending)"), scaleanchor="x", constrain="domain",
                   **{**ticks, "range": [n - 0.5, -0.5]}),
    )
    return fig


def _row_values(values: np.ndarray, row: int) -> go.Heatmap:
    """The asked row's weights, on the attention colour scale, each square labelled."""
    n = len(values)
    z = np.full((n, n), np.nan)
    z[row] = values
    text = np.full((n, n), "", dtype=object)
    if n <= MAX_WRITTEN:
        text[row] = [f"{v:.0%}" for v in values]
    return go.Heatmap(z=z, colorscale=COLORSCALE, zmin=0, zmax=1, xgap=1, ygap=1,
                      text=text, texttemplate="%{text}", textfont=dict(size=9),
                      hoverinfo="skip", showscale=False)  # no colour bar: the figure keeps its size


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
