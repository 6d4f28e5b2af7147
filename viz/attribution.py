"""Figures for direct logit attribution: the logit built up part by part (a waterfall whose last
bar is the model's logit) and every head's part as a layers × heads grid (click a head).
Pure plotly: names and numbers in, a Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .heads import head_grid
from .style import escape, label_px, titled_layout, to_numpy

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
    fig = go.Figure(go.Waterfall(
        orientation="h", y=labels, x=v.tolist() + [total],
        measure=["relative"] * len(names) + ["total"],
        text=[f"{x:+.3f}" for x in v] + [f"{total:.3f}"], textposition="outside",
        cliponaxis=False, connector=dict(line=dict(color="#bbb", width=1)),
        increasing=dict(marker=dict(color=UP)), decreasing=dict(marker=dict(color=DOWN)),
        totals=dict(marker=dict(color=TOTAL)),
        hovertemplate="%{y}: %{x:+.4f}<extra></extra>"))
    ends = np.concatenate([[0.0], np.cumsum(v), [total]])  # where every bar starts and ends
    low, high = float(ends.min()), float(ends.max())
    pad = 0.35 * (high - low or 1.0)  # room for the numbers written beside the bars
    left = int(40 + max(map(label_px, labels)))
    titled_layout(fig, title, subtitle, height=int(150 + 26 * len(labels)),
                  margin=dict(l=left, r=70, b=50),
                  xaxis=dict(title=dict(text=escape(value_name)), showgrid=True,
                             range=[low - (pad if low < 0 else 0), high + pad],
                             gridcolor="#eee", zeroline=True, zerolinecolor="#888"),
                  yaxis=dict(autorange="reversed", type="category"), dragmode=False,
                  showlegend=False)
    return fig


def head_attribution_grid(heads, title: str, subtitle: str = "",
                          value_name: str = "direct effect") -> go.Figure:
    """Every head's direct part of the logit, [layer, head], on a red/blue scale centred on 0
    (red: pushes the target up). The grid of viz.heads.head_grid: a click names the head."""
    return head_grid(to_numpy(heads, "heads", ndim=2, dtype=np.float64), title=title,
                     value_name=value_name, fmt=".2f", diverging=True, subtitle=subtitle)
