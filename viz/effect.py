"""Figures for the effect page: a token × method strip with each method's agreement with raw
attention beside it. Pure plotly: arrays, token lists and plain-text names in, a Figure out.
(The per-head view is viz/heads.py's `head_grid`.)"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .labels import axis_labels
from .style import (DIVERGING, FULL_PAGE_PX, MASKED_GREY, TEMPLATE, check_tokens, escape,
                    label_margins, subtitle_block, to_numpy)

ROW_PX = 34  # one method's row
MAX_TICK_LABELS = 150  # above this many tokens the x labels are left to the hover
BAR_SHARE = [0.68, 0.32]  # the ρ panel: about 90 px of a phone-width figure's plot area


def normalise_rows(values: np.ndarray) -> np.ndarray:
    """Each row divided by its largest absolute value (finite values only): [-1, 1], the sign
    kept. A row of zeros (or of NaN) stays as it is."""
    v = np.asarray(values, dtype=np.float64)
    top = np.nanmax(np.where(np.isfinite(v), np.abs(v), np.nan), axis=1, initial=0.0)
    top = np.where(top > 0, top, 1.0)[:, None]  # [rows, 1]
    return v / top


def method_strip(tokens, values, methods, correlations, title: str,
                 subtitle: str = "") -> go.Figure:
    """Left: rows = methods, columns = tokens, each row normalised to its largest |value| (so
    colours compare within a row, red > 0 > blue), the real value in the hover. Right, beside
    each row: that method's Spearman rank correlation with raw attention (the first row).

    tokens: one string per token; values: [n_methods, n_tokens], NaN where a method has no
    value (tokens a decoder's target cannot see, occlusion not run): grey; methods: short
    names; correlations: [n_methods], NaN written as "no value" (the first row's is its own).
    """
    tokens = check_tokens(tokens, "tokens")
    methods = check_tokens(methods, "methods")
    v = to_numpy(values, "values", ndim=2, dtype=np.float64)
    r = to_numpy(correlations, "correlations", ndim=1, dtype=np.float64)
    if v.shape != (len(methods), len(tokens)) or r.size != len(methods):
        raise ValueError(f"values must be [methods, tokens] = [{len(methods)}, {len(tokens)}] "
                         f"and correlations [{len(methods)}], got {list(v.shape)}, {r.size}")
    labels = axis_labels(tokens)
    rows = [escape(m) for m in methods]
    real = [["—" if not np.isfinite(x) else f"{x:.4g}" for x in row] for row in v]
    show_x = len(labels) <= MAX_TICK_LABELS
    margin = label_margins(rows, labels, show_x=show_x)
    sub, top = subtitle_block(subtitle, figure_px=FULL_PAGE_PX)  # spans the page
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=BAR_SHARE,
                        horizontal_spacing=0.09)  # room for a negative ρ's label
    fig.add_trace(go.Heatmap(
        z=normalise_rows(v), x=labels, y=rows, customdata=real, zmin=-1, zmax=1, zmid=0,
        colorscale=DIVERGING, showscale=False, xgap=1 if len(labels) <= 80 else 0, ygap=2,
        hoverongaps=False, hovertemplate="%{y}<br>token %{x}<br>value %{customdata} "
        "(%{z:.2f} of the row's largest)<extra></extra>"), 1, 1)
    shown = np.where(np.isfinite(r), r, 0.0)
    shown[0] = 0.0  # raw attention against itself: no bar
    text = ["(itself)"] + ["no value" if not np.isfinite(x) else f"{x:+.2f}" for x in r[1:]]
    fig.add_trace(go.Bar(
        x=shown, y=rows, orientation="h", text=text, textposition="outside", cliponaxis=False,
        marker=dict(color=shown, colorscale=DIVERGING, cmin=-1, cmax=1), showlegend=False,
        hovertemplate="%{y}: Spearman with raw attention %{text}<extra></extra>"), 1, 2)
    fig.update_layout(
        template=TEMPLATE, height=int(top + margin["b"] + ROW_PX * len(methods)),
        margin=dict(t=top, l=margin["l"] - 40, b=margin["b"], r=48),  # a +0.95 label
        title=dict(text=escape(title), subtitle=dict(text=sub)), dragmode=False,
        plot_bgcolor="white")
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=show_x,
                     title=dict(text="" if show_x else "tokens (hover for each)"), row=1, col=1)
    fig.update_xaxes(range=[-1, 1], tickvals=[-1, 0, 1], ticktext=["−1", "0", "1"],
                     zeroline=True, zerolinecolor="#555", zerolinewidth=1.5, showgrid=False,
                     title=dict(text="ρ with attention"), row=1, col=2)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.layout.xaxis.update(showgrid=False)
    fig.add_shape(type="rect", xref="x domain", yref="y domain", x0=0, x1=1, y0=0, y1=1,
                  fillcolor=MASKED_GREY, line_width=0, layer="below")
    return fig
