"""Figures for direct logit attribution: the logit built up part by part (a waterfall whose last
bar is the model's logit) and every head's part as a layers × heads grid (click a head).
Pure plotly: names and numbers in, a Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .heads import head_grid
from .numbers import signed
from .style import FULL_PAGE_PX, escape, label_px, titled_layout, to_numpy

UP, DOWN, TOTAL = "#D6604D", "#4393C3", "#555555"


def logit_waterfall(names, values, total_name: str, title: str, subtitle: str = "",
                    value_name: str = "logit") -> go.Figure:
    """Horizontal waterfall, in the order the model adds the parts (top to bottom): each bar
    starts where the previous one ended, red pushes the logit up, blue down; the last bar,
    `total_name`, is the sum of them all. names: [n] plain text; values: [n]."""
    names = [str(n) for n in names]
    v = to_numpy(values, "values", ndim=1, dtype=np.float64)
    if v.size != len(names) or not names:
        raise ValueError(f"values must have one number per name, got {v.size} for "
                         f"{len(names)} names")
    total = float(v.sum())
    labels = [escape(n) for n in names] + [escape(total_name)]
    texts = [signed(x, 3) if abs(x) < 0.001 else f"{x:+.3f}" for x in v] + [f"{total:.3f}"]
    fig = go.Figure(go.Waterfall(
        orientation="h", y=labels, x=v.tolist() + [total],
        measure=["relative"] * len(names) + ["total"], text=texts, textposition="none",
        connector=dict(line=dict(color="#bbb", width=1)),
        increasing=dict(marker=dict(color=UP)), decreasing=dict(marker=dict(color=DOWN)),
        totals=dict(marker=dict(color=TOTAL)),
        hovertemplate="%{y}: %{text}<extra></extra>"))
    # the numbers in a column of their own right of the plot: never on a bar, never across
    # the zero line, never touching a name, however narrow the figure
    colours = [UP if x > 0 else DOWN for x in v] + [TOTAL]
    for label, text, colour in zip(labels, texts, colours):
        fig.add_annotation(x=1, xref="paper", xanchor="left", xshift=6, y=label, yref="y",
                           text=text, showarrow=False, font=dict(size=12, color=colour))
    ends = np.concatenate([[0.0], np.cumsum(v), [total]])  # where every bar starts and ends
    low, high = float(ends.min()), float(ends.max())
    pad = 0.04 * (high - low or 1.0)
    left = int(24 + max(map(label_px, labels)))
    right = int(16 + max(map(label_px, texts)))
    titled_layout(fig, title, subtitle, height=int(150 + 26 * len(labels)),
                  margin=dict(l=left, r=right, b=50), figure_px=FULL_PAGE_PX,
                  xaxis=dict(title=dict(text=escape(value_name)), showgrid=True,
                             range=[min(low, 0.0) - pad, max(high, 0.0) + pad],
                             gridcolor="#eee", zeroline=True, zerolinecolor="#888"),
                  yaxis=dict(autorange="reversed", type="category", ticklabelstandoff=6),
                  dragmode=False, showlegend=False)
    return fig


def head_attribution_grid(heads, title: str, subtitle: str = "",
                          value_name: str = "direct effect") -> go.Figure:
    """Every head's direct part of the logit, [layer, head], on a red/blue scale centred on 0
    (red: pushes the target up). The grid of viz.heads.head_grid: a click names the head."""
    return head_grid(to_numpy(heads, "heads", ndim=2, dtype=np.float64), title=title,
                     value_name=value_name, fmt=".2f", diverging=True, subtitle=subtitle)
