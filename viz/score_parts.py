"""Figures for one attention score taken apart: the query-side × key-side grid of parts (by
group), the score by rotary frequency band, and the same pair at other distances. Pure
plotly: names and numbers in, a Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .heads import head_grid
from .style import FULL_PAGE_PX, escape, label_px, titled_layout, to_numpy


def positional_grid(share, title: str, subtitle: str = "") -> go.Figure:
    """Every head's share of place, [layer, head] in 0..1, on a fixed 0..1 colour scale (so a
    text where no head is positional does not look like one where one is)."""
    fig = head_grid(share, title, "share", subtitle=subtitle)
    fig.data[0].update(zmin=0.0, zmax=1.0)
    return fig


def parts_grid(q_names, k_names, values, title: str, subtitle: str = "") -> go.Figure:
    """values [q_part, k_part]: each term of the score, rows the query's parts, columns the
    key's; red adds to the score, blue takes away, the number in every cell."""
    z = to_numpy(values, "values", ndim=2, dtype=np.float64)
    q_names, k_names = [escape(n) for n in q_names], [escape(n) for n in k_names]
    if z.shape != (len(q_names), len(k_names)):
        raise ValueError(f"values must be [{len(q_names)}, {len(k_names)}] (query parts × key "
                         f"parts), got {list(z.shape)}")
    top = float(np.abs(z).max()) or 1.0
    text = [[f"{v:+.2f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(
        z=z, x=k_names, y=q_names, zmin=-top, zmax=top, colorscale="RdBu", reversescale=True,
        text=text, texttemplate="%{text}", textfont=dict(size=13),
        hovertemplate="query's %{y} × key's %{x}: %{text}<extra></extra>",
        colorbar=dict(thickness=12)))
    left = int(20 + max(map(label_px, q_names)))
    titled_layout(fig, title, subtitle, height=int(max(320, 230 + 50 * len(q_names))),
                  margin=dict(l=left, r=30, b=110), figure_px=FULL_PAGE_PX,
                  xaxis=dict(type="category", tickangle=-30),
                  yaxis=dict(type="category", autorange="reversed"), dragmode=False)
    return fig


def band_bars(periods, values, title: str, subtitle: str = "") -> go.Figure:
    """The score in each rotary frequency band: periods [band] (tokens per turn), values
    [band]; fast bands (short periods) on the left."""
    p = to_numpy(periods, "periods", ndim=1, dtype=np.float64)
    v = to_numpy(values, "values", ndim=1, dtype=np.float64)
    if p.shape != v.shape:
        raise ValueError(f"one value per band: {v.size} values for {p.size} periods")
    names = [f"{x:,.0f}" if x >= 10 else f"{x:.1f}" for x in p]
    fig = go.Figure(go.Bar(x=names, y=v, marker=dict(color=np.where(v >= 0, "#D6604D",
                                                                    "#4393C3").tolist()),
                           hovertemplate="turns once every %{x} tokens: %{y:+.3f}<extra></extra>"))
    titled_layout(fig, title, subtitle, height=380, figure_px=FULL_PAGE_PX,
                  margin=dict(l=60, r=20, b=80),
                  xaxis=dict(title=dict(text="band: tokens per full turn"), type="category"),
                  yaxis=dict(title=dict(text="part of the score"), zeroline=True,
                             zerolinecolor="#888"), dragmode=False)
    return fig


def distance_curve(distances, scores, own: int, title: str, subtitle: str = "") -> go.Figure:
    """The score the same query and key would get `distances` [n] tokens apart, the pair's
    own distance `own` marked."""
    d = to_numpy(distances, "distances", ndim=1, dtype=np.float64)
    s = to_numpy(scores, "scores", ndim=1, dtype=np.float64)
    if d.shape != s.shape:
        raise ValueError(f"one score per distance: {s.size} scores for {d.size} distances")
    fig = go.Figure(go.Scatter(x=d, y=s, mode="lines+markers", line=dict(color="#555"),
                               hovertemplate="%{x} tokens apart: %{y:.3f}<extra></extra>"))
    at = np.flatnonzero(d == own)
    if at.size:
        fig.add_trace(go.Scatter(x=[own], y=[s[at[0]]], mode="markers",
                                 marker=dict(size=13, color="#D6604D"),
                                 hovertemplate="where they are: %{y:.3f}<extra></extra>"))
    titled_layout(fig, title, subtitle, height=360, figure_px=FULL_PAGE_PX,
                  margin=dict(l=60, r=20, b=70), showlegend=False,
                  xaxis=dict(title=dict(text="tokens apart"), type="log" if d.max() > 20
                             and d.min() > 0 else "linear"),
                  yaxis=dict(title=dict(text="score")), dragmode=False)
    return fig
