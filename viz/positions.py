"""Position figures: a position table as a heatmap, a few of its dimensions as curves, the
frequencies, position × position similarity, its decay with distance, the table's principal
components, and rotary q·k against relative distance.

Arrays in, figures out; positions run down the y axis (or along x for curves), dimensions
along x. Titles and names are plain text: they are escaped here.
"""

from __future__ import annotations


import numpy as np
import plotly.graph_objects as go

from .style import DIVERGING, FULL_PAGE_PX, escape, titled_layout, to_numpy

LINE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
                "#e377c2")
MAX_CURVES = len(LINE_COLOURS)


# Below the x axis title, whatever the figure's height (paper units would drift onto it).
_LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0)


def _layout(fig: go.Figure, title: str, subtitle: str = "", height: int = 420,
            bottom: int = 90, **axes) -> go.Figure:
    return titled_layout(fig, title, subtitle, height, dict(l=70, r=30, t=90, b=bottom), **axes)


CLIP_PERCENTILE = 99.5  # heatmap colours saturate here, so one outlier cannot wash out the rest


def _symmetric(z: np.ndarray, percentile: float = 100.0) -> float:
    """Half-width of a colour range centred on 0: the given percentile of |z| (100 = max)."""
    finite = np.abs(z[np.isfinite(z)])
    if not finite.size:
        return 1.0
    limit = float(np.percentile(finite, percentile))
    return limit if limit > 0 else (float(finite.max()) or 1.0)


def position_heatmap(table, title: str, subtitle: str = "", dim_name: str = "dimension",
                     dim_labels=None) -> go.Figure:
    """A position table [pos, dim] as a heatmap: position down, dimension across, values on a
    diverging scale centred on 0 (blue < 0 < red). `dim_labels` names the columns (optional).

    z holds the exact values (hover shows them); the colours saturate at the 99.5th
    percentile of |value|, so a single outlier row (BERT's position 0) does not turn the rest
    white. The colour bar says when that clipping happened.
    """
    z = to_numpy(table, "table", ndim=2)  # [pos, dim]
    x = list(range(z.shape[1])) if dim_labels is None else [escape(d) for d in dim_labels]
    categorical = dim_labels is not None  # columns in a custom order: keep that order
    if len(x) != z.shape[1]:
        raise ValueError(f"dim_labels must have {z.shape[1]} entries, got {len(x)}")
    limit = _symmetric(z, CLIP_PERCENTILE)
    clipped = bool(np.nanmax(np.abs(z)) > limit * 1.0001) if z.size else False
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=list(range(z.shape[0])), colorscale=DIVERGING, zmin=-limit, zmax=limit,
        colorbar=dict(title=dict(text="value<br>(clipped)" if clipped else "value"),
                      thickness=12),
        hovertemplate="position %{y}, " + escape(dim_name) + " %{x}: %{z:.4f}<extra></extra>",
    ))
    return _layout(fig, title, subtitle, height=460,
                   xaxis=dict(title=dict(text=escape(dim_name)),
                              type="category" if categorical else "-", nticks=8),
                   yaxis=dict(title=dict(text="position"), autorange="reversed"))


def dimension_curves(table, dims, title: str, subtitle: str = "", names=None) -> go.Figure:
    """Chosen columns of a table [pos, dim] as curves over position, one colour each."""
    z = to_numpy(table, "table", ndim=2)  # [pos, dim]
    dims = [int(d) for d in dims]
    if not dims or len(dims) > MAX_CURVES:
        raise ValueError(f"give 1 to {MAX_CURVES} dimensions, got {len(dims)}")
    if any(not 0 <= d < z.shape[1] for d in dims):
        raise ValueError(f"dimensions must lie in [0, {z.shape[1]}), got {dims}")
    names = [f"dim {d}" for d in dims] if names is None else list(names)
    if len(names) != len(dims):
        raise ValueError("give one name per dimension")
    positions = np.arange(z.shape[0])
    fig = go.Figure()
    for d, name, colour in zip(dims, names, LINE_COLOURS):
        fig.add_trace(go.Scatter(
            x=positions, y=z[:, d], mode="lines", name=escape(name), line=dict(color=colour),
            hovertemplate=escape(name) + ", position %{x}: %{y:.4f}<extra></extra>"))
    return _layout(fig, title, subtitle, height=400 + 20 * len(dims), bottom=80 + 20 * len(dims),
                   xaxis=dict(title=dict(text="position")),
                   yaxis=dict(title=dict(text="value"), zeroline=True, zerolinecolor="#bbb"),
                   legend=_LEGEND_BELOW)


def wavelength_figure(series: dict, title: str, subtitle: str = "") -> go.Figure:
    """Wavelengths (positions per full turn) on a log scale, one curve per name.

    series: name -> (x [n], wavelength [n]); x is the dimension (or pair) index.
    """
    fig = go.Figure()
    for (name, (x, y)), colour in zip(series.items(), LINE_COLOURS):
        x, y = to_numpy(x, "x", 1), to_numpy(y, "wavelength", 1)
        if x.shape != y.shape:
            raise ValueError(f"{name}: x and wavelength must have the same length")
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines+markers", name=escape(name), marker=dict(size=4),
            line=dict(color=colour),
            hovertemplate=escape(name)
            + ", %{x}: one turn every %{y:.3~r} positions<extra></extra>"))
    return _layout(fig, title, subtitle, height=380, figure_px=FULL_PAGE_PX,  # the whole page
                   xaxis=dict(title=dict(text="dimension")),
                   yaxis=dict(title=dict(text="wavelength (positions, log scale)"), type="log"),
                   legend=_LEGEND_BELOW)


def similarity_heatmap(sim, title: str, subtitle: str = "", cosine: bool = True) -> go.Figure:
    """Position × position similarity [pos, pos]: cosine on [-1, 1], dot products centred on 0."""
    z = to_numpy(sim, "sim", ndim=2)
    if z.shape[0] != z.shape[1]:
        raise ValueError(f"sim must be square [pos, pos], got {list(z.shape)}")
    limit = 1.0 if cosine else _symmetric(z)
    n = list(range(z.shape[0]))
    fig = go.Figure(go.Heatmap(
        z=z, x=n, y=n, colorscale=DIVERGING, zmin=-limit, zmax=limit,
        colorbar=dict(title=dict(text="cosine" if cosine else "dot"), thickness=12),
        hovertemplate="position %{y} vs %{x}: %{z:.3f}<extra></extra>"))
    return _layout(fig, title, subtitle, height=440,
                   xaxis=dict(title=dict(text="position"), constrain="domain"),
                   yaxis=dict(title=dict(text="position"), autorange="reversed",
                              scaleanchor="x", constrain="domain"))


def distance_curves(curves: dict, title: str, subtitle: str = "",
                    y_title: str = "mean similarity",
                    x_title: str = "distance between positions |m − n|") -> go.Figure:
    """One value per distance 0, 1, 2 ... for each name: how similarity falls with distance."""
    fig = go.Figure()
    for n, ((name, y), colour) in enumerate(zip(curves.items(), LINE_COLOURS)):
        y = to_numpy(y, name, 1)
        # later curves dashed and thicker-first: a curve lying exactly on another still shows
        line = dict(color=colour, width=4 - 1.5 * min(n, 1), dash="dash" if n else "solid")
        fig.add_trace(go.Scatter(
            x=np.arange(len(y)), y=y, mode="lines", name=escape(name), line=line,
            hovertemplate=escape(name) + ", distance %{x}: %{y:.4f}<extra></extra>"))
    return _layout(fig, title, subtitle, height=380, figure_px=FULL_PAGE_PX,  # the whole page
                   xaxis=dict(title=dict(text=escape(x_title))),
                   yaxis=dict(title=dict(text=escape(y_title)), zeroline=True,
                              zerolinecolor="#bbb"),
                   legend=_LEGEND_BELOW)


def position_pca_figure(coords, explained, title: str, subtitle: str = "",
                        first: int = 0) -> go.Figure:
    """Position vectors' first principal components [pos, 2 or 3], joined in position order
    and coloured by position: a smooth curve means neighbouring positions are alike.
    Row i is position first + i."""
    c = to_numpy(coords, "coords", ndim=2)
    ex = to_numpy(explained, "explained", ndim=1)
    if c.shape[1] not in (2, 3) or ex.shape != (c.shape[1],):
        raise ValueError(f"coords must be [pos, 2 or 3] with one explained share per column, "
                         f"got {list(c.shape)} and {list(ex.shape)}")
    pos = np.arange(first, first + len(c))
    axis = [f"PC{i + 1} ({100 * e:.1f}% of variance)" for i, e in enumerate(ex)]
    marker = dict(color=pos, colorscale="Viridis", size=5,
                  colorbar=dict(title=dict(text="position"), thickness=12))
    common = dict(mode="lines+markers", marker=marker, line=dict(color="#bbb", width=1),
                  customdata=pos, hovertemplate="position %{customdata}<extra></extra>")
    if c.shape[1] == 3:
        fig = go.Figure(go.Scatter3d(x=c[:, 0], y=c[:, 1], z=c[:, 2], **common))
        fig.update_layout(scene=dict(xaxis_title=axis[0], yaxis_title=axis[1],
                                     zaxis_title=axis[2]))
        return _layout(fig, title, subtitle, height=480)
    fig = go.Figure(go.Scatter(x=c[:, 0], y=c[:, 1], **common))
    return _layout(fig, title, subtitle, height=440, xaxis=dict(title=dict(text=axis[0])),
                   yaxis=dict(title=dict(text=axis[1])))


def rotary_distance_figure(curves: dict, title: str, subtitle: str = "") -> go.Figure:
    """q·k after rotation against the distance between query and key, one curve per pair."""
    return distance_curves(curves, title, subtitle, y_title="q·k after rotation",
                           x_title="query position − key position")


def relative_bias_figure(distances, bias, title: str, subtitle: str = "") -> go.Figure:
    """T5's relative position bias: one row per head, one column per distance (key position −
    query position), the number added to every attention score, centred on 0 (red adds,
    blue takes away). distances [n], bias [head, n]."""
    x = to_numpy(distances, "distances", ndim=1)
    z = to_numpy(bias, "bias", ndim=2)
    if z.shape[1] != len(x):
        raise ValueError(f"bias must be [head, {len(x)}] (one column per distance), "
                         f"got {list(z.shape)}")
    limit = _symmetric(z) or 1.0
    heads = list(range(z.shape[0]))
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=heads, colorscale=DIVERGING, zmin=-limit, zmax=limit,
        colorbar=dict(title=dict(text="added to the score"), thickness=12),
        hovertemplate="head %{y}, key %{x} positions from the query: %{z:+.3f}<extra></extra>"))
    return _layout(fig, title, subtitle, height=max(260, 60 + 26 * len(heads)),
                   figure_px=FULL_PAGE_PX,
                   xaxis=dict(title=dict(text="key position − query position")),
                   yaxis=dict(title=dict(text="head"), autorange="reversed", dtick=1))
