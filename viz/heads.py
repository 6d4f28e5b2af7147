"""Figures for per-head numbers and for ablation: a layers × heads grid, next-token bars and
per-token similarity bars. Pure plotly: arrays and token lists in, a Figure out."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import axis_labels, looks_byte_level, token_label
from .style import (COLORSCALE, DIVERGING, FULL_PAGE_PX, PLOTLY_CHAR_EM, TEMPLATE, TEMPLATE_TOP,
                    check_tokens, fitted_font_px, subtitle_block, to_numpy)

BAR_LABEL_LIMIT = 150  # above this many bars only the largest are labelled (`largest_apart`)
BARS_NAMED = 12
CELL_TEXT_LIMIT = 400  # above this many cells the values are left to the hover
MAX_CELL_DECIMALS = 3
# In-cell numbers only when they stay legible on the narrowest screen the app supports: an
# 800 px window with the sidebar open leaves the grid about NARROW_GRID_PX of plot width, and
# plotly's automatic text size (about 0.65 × size per character) must be at least MIN_TEXT_PX.
NARROW_GRID_PX, MIN_TEXT_PX = 300, 10
SMALL_GRID_HEADS = 12


def _own_digits(v: float) -> str:
    """Two significant digits of this value (at most MAX_CELL_DECIMALS decimals), "" for NaN."""
    if not np.isfinite(v):
        return ""
    if v == 0:
        return "0"
    decimals = int(np.clip(1 - np.floor(np.log10(abs(v))), 0, MAX_CELL_DECIMALS))
    out = format(v, f".{decimals}f")
    return out[1:] if out.startswith("-") and not out.strip("-0.") else out  # no "-0.000"


def cell_text(z: np.ndarray, max_chars: int | None = None) -> list[list[str]]:
    """Short in-cell labels for a grid, "" for NaN. With `max_chars` (what fits a cell on the
    narrowest screen), each cell gets two significant digits of its own value when every label
    fits (so a small value does not read "0.0" beside a large one). Otherwise: two significant
    digits of the largest |value|, the same number of decimals in every cell (so they read as
    a column). The hover keeps the full value."""
    if max_chars is not None:
        own = [[_own_digits(v) for v in row] for row in z.tolist()]
        if max(len(t) for row in own for t in row) <= max_chars:
            return own
    finite = np.abs(z[np.isfinite(z)])
    top = float(finite.max()) if finite.size else 0.0
    decimals = 2 if top == 0 else int(np.clip(1 - np.floor(np.log10(top)), 0,
                                              MAX_CELL_DECIMALS))
    zero = format(0.0, f".{decimals}f")

    def one(v: float) -> str:
        if not np.isfinite(v):
            return ""
        out = format(v, f".{decimals}f")
        return zero if out == "-" + zero else out  # no "-0.00"

    return [[one(v) for v in row] for row in z.tolist()]


def head_grid(values, title: str, value_name: str, fmt: str = ".2f", diverging: bool = False,
              marked=(), subtitle: str = "") -> go.Figure:
    """A layers × heads grid coloured by one number per head.

    values: [n_layers, head]; rows are layers (0 at the top), columns heads. NaN cells stay
    blank. diverging=True centres a red/blue scale on 0 (for signed effects). `marked` lists
    (layer, head) cells to outline. Two traces: 0 the heatmap, 1 a transparent scatter with
    one point per cell whose customdata is [layer, head], so a click in Streamlit's
    `on_select` names the head. `title`, `value_name` and `subtitle` are plain text.
    """
    z = to_numpy(values, "values", ndim=2, dtype=np.float64)
    n_layers, n_heads = z.shape
    if 0 in z.shape:
        raise ValueError(f"values must be [n_layers, head] with both > 0, got {list(z.shape)}")
    finite = z[np.isfinite(z)]
    scale = dict(colorscale=COLORSCALE)
    if diverging:
        top = float(np.abs(finite).max()) if finite.size else 1.0
        scale = dict(colorscale=DIVERGING, zmid=0, zmin=-top or -1, zmax=top or 1)
    name = html.escape(value_name, quote=False)
    # Small grids (up to SMALL_GRID_HEADS columns): each cell its own two digits, if they fit.
    labels = cell_text(z, int(NARROW_GRID_PX / n_heads / (PLOTLY_CHAR_EM * MIN_TEXT_PX))
                       if n_heads <= SMALL_GRID_HEADS else None)
    longest = max(len(t) for row in labels for t in row) or 1
    show_text = (n_layers * n_heads <= CELL_TEXT_LIMIT
                 and fitted_font_px(NARROW_GRID_PX / n_heads, longest) >= MIN_TEXT_PX)
    layer_idx, head_idx = np.divmod(np.arange(n_layers * n_heads), n_heads)
    value_text = [("" if not np.isfinite(v) else format(v, fmt)) for v in z.reshape(-1)]
    fig = go.Figure([
        go.Heatmap(
            z=z, x=list(range(n_heads)), y=list(range(n_layers)), hoverongaps=False,
            # No font size: plotly then sizes the text to fit the narrowest cell (up to the
            # page's font size), so a narrow screen gets smaller text, never text that spills.
            text=labels if show_text else None,
            texttemplate="%{text}" if show_text else None, xgap=1, ygap=1, hoverinfo="skip",
            colorbar=dict(title=dict(text=name), thickness=14), **scale,
        ),
        # Hover and clicks go through this trace (the heatmap skips both); customdata is a
        # plain list so the browser sends it back as [layer, head] (numpy would go as base64).
        go.Scatter(
            x=head_idx.tolist(), y=layer_idx.tolist(), mode="markers", name="pick a head",
            customdata=np.stack([layer_idx, head_idx], 1).tolist(), text=value_text,
            marker=dict(symbol="square", size=22, color="rgba(0,0,0,0)"),
            selected=dict(marker=dict(color="rgba(255,255,255,0.35)")),
            unselected=dict(marker=dict(opacity=0)), showlegend=False,
            hovertemplate=f"layer %{{customdata[0]}}, head %{{customdata[1]}}<br>{name}: "
                          "%{text}<br>click to pick<extra></extra>",
        ),
    ])
    for layer, head in marked:
        fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
                      line=dict(color="black", width=2))
    sub, top = subtitle_block(subtitle, figure_px=FULL_PAGE_PX)  # spans the page
    fig.update_layout(
        template=TEMPLATE, clickmode="event+select", dragmode=False, hovermode="closest",
        hoverdistance=-1, margin=dict(t=top),
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=sub)),
        height=int(min(900, max(300, 150 + 34 * n_layers))) + top - TEMPLATE_TOP,
        xaxis=dict(title=dict(text="head"), tickmode="array", tickvals=list(range(n_heads)),
                   range=[-0.5, n_heads - 0.5], showgrid=False, zeroline=False),
        yaxis=dict(title=dict(text="layer"), tickmode="array", tickvals=list(range(n_layers)),
                   range=[n_layers - 0.5, -0.5], showgrid=False, zeroline=False),
    )
    return fig


def picked_head(points, n_heads: int) -> tuple[int, int] | None:
    """(layer, head) of the first clicked point of a `head_grid`, from a Streamlit selection's
    `points` (dicts). Falls back to the point's index (cells run layer by layer) when the
    browser did not send customdata back."""
    for point in points or []:
        custom = point.get("customdata")
        if isinstance(custom, (list, tuple)) and len(custom) >= 2:
            return int(custom[0]), int(custom[1])
        if point.get("curve_number", 1) == 1 and point.get("point_index") is not None:
            return divmod(int(point["point_index"]), n_heads)
    return None


def next_token_bars(tokens, clean, ablated, title: str = "Next-token probabilities") -> go.Figure:
    """Horizontal bars: for each candidate token, its probability before and after ablation.

    tokens: candidate token strings (raw); clean, ablated: [len(tokens)] probabilities.
    """
    tokens = check_tokens(tokens, "tokens")
    p0 = to_numpy(clean, "clean", ndim=1)
    p1 = to_numpy(ablated, "ablated", ndim=1)
    if not len(tokens) == p0.size == p1.size:
        raise ValueError(f"tokens, clean and ablated must have the same length, got "
                         f"{len(tokens)}, {p0.size}, {p1.size}")
    byte_level = looks_byte_level(tokens)
    labels = [f"{i + 1}. {token_label(t, byte_level)}" for i, t in enumerate(tokens)]
    fig = go.Figure([
        go.Bar(y=labels, x=p0, orientation="h", name="all heads", marker_color="#7f7f7f",
               hovertemplate="%{y}: %{x:.3f} with all heads<extra></extra>"),
        go.Bar(y=labels, x=p1, orientation="h", name="heads removed", marker_color="#d62728",
               hovertemplate="%{y}: %{x:.3f} with the heads removed<extra></extra>"),
    ])
    fig.update_layout(
        template=TEMPLATE, barmode="group", title=dict(text=html.escape(title, quote=False)),
        height=int(min(800, 160 + 34 * len(tokens))), legend=dict(orientation="h", y=-0.15),
        xaxis=dict(title=dict(text="probability"), showgrid=True,
                   range=[0, min(1.0, 1.15 * float(max(p0.max(initial=0), p1.max(initial=0))))
                          or 1.0]),
        yaxis=dict(autorange="reversed", type="category"),
    )
    return fig


def token_bars(tokens, values, title: str, value_name: str, subtitle: str = "",
               diverging: bool = False) -> go.Figure:
    """One bar per token position (a cosine similarity, a change in loss...).

    tokens: one string per bar (raw tokens or `axis_labels` output); values: [len(tokens)].
    diverging=True colours bars red above 0 and blue below (signed changes); otherwise on
    Viridis from min(0, lowest) to the highest value. NaN bars are left out.
    """
    tokens = check_tokens(tokens, "tokens")
    v = to_numpy(values, "values", ndim=1)
    if v.size != len(tokens):
        raise ValueError(f"values need one entry per token ({len(tokens)}), got {v.size}")
    labels = axis_labels(tokens)
    finite = v[np.isfinite(v)]
    if diverging:
        top = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
        marker = dict(color=v, colorscale=DIVERGING, cmid=0, cmin=-top, cmax=top)
    else:
        low = float(min(0.0, finite.min())) if finite.size else 0.0
        high = float(finite.max()) if finite.size else 1.0
        marker = dict(color=v, colorscale=COLORSCALE, cmin=low, cmax=max(high, low + 1e-9))
    name = html.escape(value_name, quote=False)
    fig = go.Figure(go.Bar(x=labels, y=v, marker=marker,
                           hovertemplate=f"%{{x}}: {name} %{{y:.4f}}<extra></extra>"))
    named = [] if len(labels) <= BAR_LABEL_LIMIT else largest_apart(v)
    if named:  # too many bars to label each: the largest ones are named, never touching
        subtitle = (f"{subtitle}; " if subtitle else "") + (
            f"labelled: the {len(named)} largest, apart; hover any bar for its token")
    sub, top = subtitle_block(subtitle, figure_px=FULL_PAGE_PX)  # spans the page
    fig.update_layout(
        template=TEMPLATE, height=380 + top - TEMPLATE_TOP, margin=dict(t=top),
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=sub)),
        xaxis=dict(type="category", tickangle=-60),
        yaxis=dict(title=dict(text=name), showgrid=True, zeroline=True),
    )
    if len(labels) > BAR_LABEL_LIMIT:
        fig.update_xaxes(tickmode="array", tickvals=[labels[i] for i in named],
                         ticktext=[labels[i] for i in named], showticklabels=bool(named))
    return fig


def largest_apart(values, most: int = BARS_NAMED, plot_px: float = FULL_PAGE_PX - 60,
                  label_px: float = 16.0) -> list[int]:
    """Positions of the bars with the largest |value| (at most `most`, in order along the
    axis), no two closer than a slanted label needs (`label_px`) on a plot `plot_px` wide:
    the narrowest screen's. NaN bars are never named."""
    v = np.abs(np.asarray(values, dtype=float))
    gap = int(np.ceil(v.size * label_px / plot_px))
    chosen: list[int] = []
    for i in np.argsort(-np.nan_to_num(v, nan=-1.0), kind="stable"):
        if len(chosen) == most or not np.isfinite(v[i]):
            break
        if all(abs(int(i) - j) >= gap for j in chosen):
            chosen.append(int(i))
    return sorted(chosen)
