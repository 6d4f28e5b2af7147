"""Figures for lessons: a heatmap with its values hidden, for "click the cell you expect to be
brightest" questions."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import axis_labels
from .style import TEMPLATE, figure_height, label_margins

HIDDEN, ASKED = "#eeeeee", "#ffd54f"


def blind_heatmap(tokens, row: int, title: str) -> go.Figure:
    """Every cell the same pale grey, the asked query row highlighted; no value is in the
    figure. Two traces: 0 the grid, 1 a transparent scatter over the asked row whose
    customdata is the key's position, so a click in Streamlit's `on_select` names the key."""
    labels = axis_labels(tokens)
    n = len(labels)
    if not 0 <= row < n:
        raise ValueError(f"row must be in [0, {n - 1}], got {row}")
    z = np.zeros((n, n), dtype=np.float32)
    z[row] = 1.0
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
    fig.update_layout(
        template=TEMPLATE, height=figure_height(n, low=560, high=900), clickmode="event+select", dragmode=False,
        hovermode="closest", margin=dict(r=30, t=70, **label_margins(labels, labels, 60)),
        title=dict(text=html.escape(title, quote=False),
                   subtitle=dict(text="values hidden until you answer")),
        xaxis=dict(title=dict(text="key (attended to)"), tickangle=-60, constrain="domain",
                   **ticks),
        yaxis=dict(title=dict(text="query (attending)"), scaleanchor="x", constrain="domain",
                   **{**ticks, "range": [n - 0.5, -0.5]}),
    )
    return fig


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
