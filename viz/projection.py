"""Embedding figures: the embedding sum's parts, their norms, token vectors projected to 2D or
3D (with one token's path through the layers), and queries and keys of one head in one space.

Arrays and token labels in, figures out. Labels should come from `viz.labels.axis_labels`
(escaped, unique); other text is escaped here.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from .point_labels import spread_labels
from .style import (
    AXIS_TITLE_PX, DIVERGING, FULL_PAGE_PX, check_tokens, escape, label_margins, label_px,
    titled_layout, to_numpy,
)

CATEGORY_COLOURS = tuple(qualitative.Dark24)
MAX_CATEGORIES = len(CATEGORY_COLOURS)  # more distinct tokens than this: the rest are grey
OTHER_GREY = "#c8c8c8"
# The plot area's assumed size on a narrow screen (px), for spreading the point labels apart
PROJECTION_PLOT_PX = (260.0, 440.0, 260.0)  # beside a colour bar or legend
QK_PLOT_PX = (360.0, 380.0)
BAR_TOKENS = 60  # norms as grouped bars up to this many tokens, as lines beyond
QUERY_COLOUR, KEY_COLOUR = "#d62728", "#1f77b4"
LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0)
# The legend under a bar chart's slanted tick labels: one row of entries, the gap above it
LEGEND_ROW_PX, LEGEND_GAP_PX, LEGEND_ENTRY_PX = 30.0, 18.0, 45.0  # entry: marker and spacing
NARROW_FIGURE_PX = 440.0  # a page-wide figure in an 800 px window, where the legend wraps
TICK_ANGLE = 60


def named_words(named: int, total: int, what: str = "points") -> str:
    """How many points carry their name on the plot: "12 of 325 points are named on the plot;
    hover for the rest" (or "all 13 points are named")."""
    if named >= total:
        return f"all {total} {what} are named on the plot"
    return f"{named} of {total} {what} are named on the plot; hover for the rest"


def _with(subtitle: str, line: str) -> str:
    return f"{subtitle}; {line}" if subtitle else line


def _layout(fig: go.Figure, title: str, subtitle: str = "", height: int = 520,
            **rest) -> go.Figure:
    margin = rest.pop("margin", dict(l=60, r=30, t=90, b=50))
    # every figure of the embeddings page spans the page: subtitles as long as that fits
    return titled_layout(fig, title, subtitle, height, margin, figure_px=FULL_PAGE_PX, **rest)


def parts_figure(rows, names, title: str, subtitle: str = "",
                 scale_rows: int | None = None) -> go.Figure:
    """Vectors stacked as rows [part, d_model] (e.g. token, type, position, sum, LayerNorm),
    one diverging colour scale for all, so a learner can see the sum column by column.

    scale_rows: the colour range is set by the first `scale_rows` rows only (default all);
    later rows with larger values (LayerNorm's output) saturate, and the colour bar says so.
    """
    z = to_numpy(rows, "rows", ndim=2)  # [part, d_model]
    names = check_tokens(names, "names")
    if len(names) != z.shape[0]:
        raise ValueError(f"give one name per row: {z.shape[0]} rows, {len(names)} names")
    ref = z[: scale_rows or len(z)]
    finite = np.abs(ref[np.isfinite(ref)])
    limit = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    clipped = bool(np.nanmax(np.abs(z)) > limit) if z.size else False
    y = [escape(n) for n in names]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(z.shape[1])), y=y, colorscale=DIVERGING, zmin=-limit, zmax=limit,
        colorbar=dict(title=dict(text="value<br>(clipped)" if clipped else "value"),
                      thickness=12),
        hovertemplate="%{y}, dimension %{x}: %{z:.4f}<extra></extra>"))
    return _layout(fig, title, subtitle, height=160 + 48 * len(names),
                   xaxis=dict(title=dict(text="dimension")),
                   yaxis=dict(autorange="reversed", type="category"))


def length_of(name: str) -> str:
    """"length of token", "length after LayerNorm": a vector's length named in words."""
    return f"length {name}" if name.startswith("after ") else f"length of {name}"


def tick_drop(tick_labels) -> float:
    """How far (px) tick labels slanted by TICK_ANGLE reach below the plot."""
    return label_margins([], tick_labels, TICK_ANGLE, show_y=False)["b"] - AXIS_TITLE_PX


def legend_bottom(tick_labels, names) -> int:
    """The bottom margin (px) for tick labels slanted by TICK_ANGLE with the legend right
    under them: the longest label's drop plus the legend's rows (as many as its entries need
    on a narrow screen). The legend hangs from the labels, so a spare row is empty space
    under it, never a band between the labels and the legend."""
    width = sum(label_px(n) + LEGEND_ENTRY_PX for n in names)
    rows = max(1, math.ceil(width / NARROW_FIGURE_PX))
    return int(tick_drop(tick_labels) + LEGEND_GAP_PX + rows * LEGEND_ROW_PX)


def norms_figure(norms: dict, labels, title: str, subtitle: str = "") -> go.Figure:
    """For each token (x), the length (L2 norm) of each named vector: grouped bars up to
    BAR_TOKENS tokens, one line per vector beyond (hundreds of bar groups cannot be read)."""
    labels = check_tokens(labels, "labels")
    bars = len(labels) <= BAR_TOKENS
    fig = go.Figure()
    for (name, values), colour in zip(norms.items(), CATEGORY_COLOURS):
        v = to_numpy(values, name, ndim=1)
        if len(v) != len(labels):
            raise ValueError(f"{name}: {len(v)} norms for {len(labels)} tokens")
        hover = "%{x}: " + escape(length_of(name)) + " = %{y:.3f}<extra></extra>"
        fig.add_trace(go.Bar(x=labels, y=v, name=escape(name), marker_color=colour,
                             hovertemplate=hover) if bars else
                      go.Scatter(x=labels, y=v, name=escape(name), mode="lines",
                                 line=dict(color=colour, width=1), hovertemplate=hover))
    # bars: the bottom margin is set here (no automargin, which also reserves room for an
    # axis title there is none of), and the legend hangs right under the slanted labels
    _layout(fig, title, subtitle, height=440 if bars else 380, barmode="group",
            xaxis=dict(type="category", tickangle=-TICK_ANGLE, showticklabels=bars,
                       automargin=not bars,
                       title=dict(text="" if bars else "token (hover for its label)")),
            yaxis=dict(title=dict(text="length")), legend=LEGEND_BELOW,
            margin=dict(l=60, r=30, t=90, b=legend_bottom(labels, list(norms)) if bars else 90))
    if bars:
        plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        fig.update_layout(legend=dict(yref="paper", yanchor="top",
                                      y=-(tick_drop(labels) + LEGEND_GAP_PX) / plot_px))
    return fig


def _groups(values: list[str]) -> list[tuple[str, np.ndarray, bool]]:
    """(category, point indices, is "other") in reading order (sentence 1, 2, ...; tokens as
    they first appear); when there are more than MAX_CATEGORIES, the most frequent
    MAX_CATEGORIES - 1 keep a colour and the rest are pooled into one grey "other" group."""
    counts = Counter(values)
    top = [v for v, _ in counts.most_common()]
    keep = top if len(top) <= MAX_CATEGORIES else top[: MAX_CATEGORIES - 1]
    first = {v: i for i, v in reversed(list(enumerate(values)))}
    keep = sorted(keep, key=first.__getitem__)
    arr = np.array(values, dtype=object)
    out = [(v, np.flatnonzero(arr == v), False) for v in keep]
    rest = np.flatnonzero(~np.isin(arr, np.array(keep, dtype=object)))
    if rest.size:
        out.append((f"other ({len(top) - len(keep)} kinds)", rest, True))
    return out


def projection_figure(coords, labels, color, color_title: str, title: str, subtitle: str = "",
                      categorical: bool = False, axis_titles=None, path=None,
                      path_names=None, path_title: str = "") -> go.Figure:
    """Token vectors projected to 2D or 3D: coords [point, 2 or 3], one safe label per point
    (on hover; on the marker too where it has room, `spread_labels`).

    color: [point] numbers (a continuous scale, e.g. position) or, with categorical=True,
    [point] strings (one colour per category, e.g. the token or the sentence).
    path: optional [step, 2 or 3], one token's coordinates layer by layer, drawn as a line
    with a marker per step named by `path_names`.
    """
    c = to_numpy(coords, "coords", ndim=2)  # [point, k]
    labels = check_tokens(labels, "labels")
    k = c.shape[1]
    if k not in (2, 3) or len(labels) != len(c) or len(color) != len(c):
        raise ValueError(f"coords must be [point, 2 or 3] with one label and one colour per "
                         f"point; got {list(c.shape)}, {len(labels)} labels, {len(color)} colours")
    axis_titles = list(axis_titles or [f"component {i + 1}" for i in range(k)])
    shown = spread_labels(c, labels, PROJECTION_PLOT_PX[:k])  # [point]: keeps its text label
    scatter = go.Scatter3d if k == 3 else go.Scatter

    def points(idx, name, marker, showlegend):
        xyz = dict(zip("xyz", c[idx].T))
        text = [labels[i] if shown[i] else "" for i in idx]
        return scatter(**xyz, mode="markers+text", name=name, marker=marker, text=text,
                       customdata=[labels[i] for i in idx], textposition="top center",
                       textfont=dict(size=11, color="#444"), showlegend=showlegend,
                       hovertemplate="%{customdata}<extra>%{fullData.name}</extra>"
                       if categorical else "%{customdata}<extra></extra>")

    size = 5 if k == 3 else 9
    fig = go.Figure()
    if categorical:
        for i, (value, idx, other) in enumerate(_groups([str(v) for v in color])):
            colour = OTHER_GREY if other else CATEGORY_COLOURS[i]
            fig.add_trace(points(idx, escape(value), dict(color=colour, size=size), True))
    else:
        values = to_numpy(color, "color", ndim=1)
        marker = dict(color=values, colorscale="Viridis", size=size, opacity=0.9,
                      colorbar=dict(title=dict(text=escape(color_title)), thickness=12))
        fig.add_trace(points(np.arange(len(c)), escape(color_title), marker, False))
    if path is not None:
        p = to_numpy(path, "path", ndim=2)
        names = [escape(n) for n in (path_names or [f"step {i}" for i in range(len(p))])]
        if p.shape[1] != k or len(names) != len(p):
            raise ValueError(f"path must be [step, {k}] with one name per step")
        fig.add_trace(scatter(
            **dict(zip("xyz", p.T)), mode="lines+markers+text", name=escape(path_title),
            text=names, textposition="bottom center", textfont=dict(size=11, color="#000"),
            line=dict(color="#000", width=2), marker=dict(color="#000", size=size - 2,
                                                          symbol="diamond"),
            hovertemplate=escape(path_title) + ", %{text}<extra></extra>"))
    legend = dict(title=dict(text=escape(color_title)), itemsizing="constant")
    named = named_words(int(shown.sum()), len(c))
    if k == 3:
        fig.update_layout(scene=dict(xaxis_title=escape(axis_titles[0]),
                                     yaxis_title=escape(axis_titles[1]),
                                     zaxis_title=escape(axis_titles[2])))
        return _layout(fig, title, _with(subtitle, named), height=620, legend=legend)
    return _layout(fig, title, _with(subtitle, named), height=600, legend=legend,
                   xaxis=dict(title=dict(text=escape(axis_titles[0])), zeroline=False),
                   yaxis=dict(title=dict(text=escape(axis_titles[1])), zeroline=False))


def joint_qk_figure(q, k, top_key, labels, title: str, subtitle: str = "",
                    axis_titles=("component 1", "component 2")) -> go.Figure:
    """Queries (circles) and keys (diamonds) of one head in one 2D space [pos, 2] each, with a
    line from each query to the key it attends to most (`top_key` [pos]). Every point is named
    on hover; those with room (`spread_labels`, queries and keys together) on the plot too."""
    q, k = to_numpy(q, "q", ndim=2), to_numpy(k, "k", ndim=2)
    top = np.asarray(top_key, dtype=int)
    labels = check_tokens(labels, "labels")
    n = len(labels)
    if q.shape != (n, 2) or k.shape != (n, 2) or top.shape != (n,):
        raise ValueError(f"q and k must be [pos, 2] and top_key [pos] for {n} tokens; got "
                         f"{list(q.shape)}, {list(k.shape)}, {list(top.shape)}")
    if n and (top.min() < 0 or top.max() >= n):
        raise ValueError(f"top_key must index the {n} keys")
    xs = np.full(3 * n, np.nan)
    ys = np.full(3 * n, np.nan)
    xs[0::3], ys[0::3] = q[:, 0], q[:, 1]
    xs[1::3], ys[1::3] = k[top, 0], k[top, 1]
    both = np.vstack([q, k])  # [2 * pos, 2]: queries, then keys
    shown = spread_labels(both, labels + labels, QK_PLOT_PX)  # [2 * pos]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="query → its top key",
                             line=dict(color="#999", width=1), hoverinfo="skip",
                             opacity=1.0 if n <= 60 else 0.5))
    top_names = [labels[j] for j in top]
    for name, xy, colour, symbol, extra, on in (
            ("query", q, QUERY_COLOUR, "circle", top_names, shown[:n]),
            ("key", k, KEY_COLOUR, "diamond", None, shown[n:])):
        hover = ("query %{customdata[0]} → attends most to %{customdata[1]}" if extra
                 else "key %{customdata[0]}")
        fig.add_trace(go.Scatter(
            x=xy[:, 0], y=xy[:, 1], mode="markers+text", name=name,
            text=[lab if keep else "" for lab, keep in zip(labels, on)],
            customdata=[[lab, to] for lab, to in zip(labels, extra or labels)],
            textposition="top center", textfont=dict(size=11, color=colour),
            marker=dict(color=colour, size=9 if n <= 60 else 6, symbol=symbol),
            hovertemplate=hover + "<extra></extra>"))
    named = named_words(int(shown.sum()), 2 * n, f"points ({n} queries, {n} keys)")
    return _layout(fig, title, _with(subtitle, named), height=580,
                   xaxis=dict(title=dict(text=escape(axis_titles[0])), zeroline=False),
                   yaxis=dict(title=dict(text=escape(axis_titles[1])), zeroline=False),
                   legend=LEGEND_BELOW, margin=dict(l=60, r=30, t=90, b=100))
