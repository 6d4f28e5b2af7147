"""Figures for the forward-pass walkthrough: the token table, value heatmaps, scores, the mask
as a matrix of 0 and −∞, the activation curve, the layer stack and the next-token bars.

Pure functions: arrays and token lists in, `plotly.graph_objects.Figure` out. Rows of every
[q_pos, k_pos] matrix are queries, columns are keys.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .heatmap_fit import MIN_CELL_PX
from .labels import axis_labels, looks_byte_level, token_label
from .numbers import percent
from .style import (COLORBAR_MARGIN, COLORSCALE, DIVERGING, MASKED_GREY, TEMPLATE,
                    figure_height, heatmap_size, label_margins, subtitle_block, to_numpy,
                    top_margin, wrap_lines)

BLOCKED = np.finfo(np.float32).min / 2  # the model writes −∞ as float32's minimum
MAX_VALUE_COLUMNS = 128  # value heatmaps show the first features only
MASK_TEXT_LIMIT = 16  # above this many tokens the mask cells carry no "0" / "−∞" text
MAX_SCATTER_POINTS = 4000
TICK_LABEL_LIMIT = 150


def _title(text: str, subtitle: str = "") -> dict:
    out = dict(text=html.escape(text, quote=False))
    if subtitle:
        out["subtitle"] = dict(text=subtitle_block(subtitle)[0])
    return out


def _square_axes(fig: go.Figure, labels: list[str], subtitle: str, colorbar: bool,
                 max_width: int | None) -> go.Figure:
    """A [q_pos, k_pos] matrix sized to its tokens like the attention heatmap (square cells,
    the colour bar beside the plot; show it with width="content"), grey behind masked cells."""
    long = len(labels) > TICK_LABEL_LIMIT
    sub, top = subtitle_block(subtitle)
    margin = dict(r=COLORBAR_MARGIN if colorbar else 30, t=top, pad=0,
                  **label_margins(labels, labels, 60, not long, not long))
    fig.update_layout(
        template=TEMPLATE, plot_bgcolor=MASKED_GREY, margin=margin,
        **heatmap_size(len(labels), len(labels), margin, max_width),
        xaxis=dict(title=dict(text="key"), tickangle=-60, type="category",
                   showticklabels=not long),
        yaxis=dict(title=dict(text="query"), autorange="reversed", type="category",
                   showticklabels=not long),
    )
    fig.layout.title.subtitle = dict(text=sub)
    return fig


def _square(matrix, tokens, name: str) -> tuple[np.ndarray, list[str]]:
    z = to_numpy(matrix, name, ndim=2)
    labels = axis_labels(tokens)
    if z.shape != (len(labels), len(labels)):
        raise ValueError(f"{name} must be [len(tokens), len(tokens)] = [{len(labels)}, "
                         f"{len(labels)}] (rows = queries, columns = keys), got {list(z.shape)}")
    return z, labels


def _axes(fig: go.Figure, n_rows: int, x_title: str, y_title: str) -> go.Figure:
    """Rows = tokens (or layers) top down, as wide as the page; the top margin fits the
    wrapped subtitle."""
    subtitle = fig.layout.title.subtitle.text or ""
    fig.update_layout(
        template=TEMPLATE, height=figure_height(n_rows), plot_bgcolor=MASKED_GREY,
        margin=dict(t=top_margin(subtitle.count("<br>") + 1)),
        xaxis=dict(title=dict(text=x_title), tickangle=-60, type="category"),
        yaxis=dict(title=dict(text=y_title), autorange="reversed", type="category",
                   showticklabels=n_rows <= TICK_LABEL_LIMIT),
    )
    return fig


def token_table(batch_tokens: list[list[str]], input_ids, attention_mask,
                token_type_ids=None) -> go.Figure:
    """One row per position: for each text of the batch its token, id, mask (and type)."""
    ids = to_numpy(input_ids, "input_ids", 2, dtype=np.int64)
    mask = to_numpy(attention_mask, "attention_mask", 2, dtype=np.int64)
    types = None if token_type_ids is None else to_numpy(token_type_ids, "token_type_ids", 2,
                                                         dtype=np.int64)
    if len(batch_tokens) != ids.shape[0] or any(len(t) != ids.shape[1] for t in batch_tokens):
        raise ValueError(f"batch_tokens must be [batch][pos] = [{ids.shape[0]}][{ids.shape[1]}]")
    if mask.shape != ids.shape or (types is not None and types.shape != ids.shape):
        raise ValueError(f"attention_mask and token_type_ids must have the ids' shape "
                         f"{list(ids.shape)}")
    header, cells, fill = [], [], []
    for b, tokens in enumerate(batch_tokens):
        tag = f" ({b + 1})" if ids.shape[0] > 1 else ""
        header += [f"position·token{tag}", f"id{tag}", f"mask{tag}"]
        cells += [axis_labels(tokens), ids[b].tolist(), mask[b].tolist()]
        if types is not None:
            header.append(f"type{tag}")
            cells.append(types[b].tolist())
    pad = np.where(mask == 0, "#e3e3e3", "white")  # [batch, pos]: padding rows in grey
    for b in range(ids.shape[0]):
        fill += [pad[b].tolist()] * (4 if types is not None else 3)
    fig = go.Figure(go.Table(header=dict(values=header, fill_color="#e8eef7", align="left"),
                             cells=dict(values=cells, fill_color=fill, align="left")))
    fig.update_layout(template=TEMPLATE, margin=dict(l=10, r=10, t=40, b=10),
                      height=int(min(700, 80 + 26 * ids.shape[1])),
                      title=_title("Tokens, ids and mask" + (" (grey = padding)"
                                                             if (mask == 0).any() else "")))
    return fig


def values_heatmap(matrix, tokens, title: str, col_name: str = "feature") -> go.Figure:
    """Rows = tokens, columns = the first MAX_VALUE_COLUMNS features, blue < 0 < red."""
    z = to_numpy(matrix, "matrix", ndim=2)
    labels = axis_labels(tokens)
    if z.shape[0] != len(labels):
        raise ValueError(f"matrix must have one row per token ({len(labels)}), got {z.shape[0]}")
    n_cols = z.shape[1]
    z = z[:, :MAX_VALUE_COLUMNS]
    # The 99th percentile, so one outlier feature does not wash out the rest (colours saturate).
    limit = float(np.percentile(np.abs(z), 99)) or float(np.abs(z).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=z, y=labels, x=[str(i) for i in range(z.shape[1])], colorscale=DIVERGING,
        zmin=-limit, zmax=limit, colorbar=dict(thickness=14),
        hovertemplate="%{y}, " + col_name + " %{x}: %{z:.3f}<extra></extra>"))
    cut = f"first {z.shape[1]} of {n_cols}" if n_cols > z.shape[1] else f"all {n_cols}"
    fig.update_layout(title=_title(title, f"rows = tokens, one column per {col_name} ({cut}); "
                                   f"blue < 0 < red, saturated at ±{limit:.3g}"))
    return _axes(fig, len(labels), col_name, "token")


def scores_heatmap(matrix, tokens, title: str, max_width: int | None = None) -> go.Figure:
    """Signed scores [q_pos, k_pos]; cells the model blocked (its −∞) drawn grey, as in every
    figure of the app."""
    z, labels = _square(matrix, tokens, "scores")
    blocked = z <= BLOCKED
    z = np.where(blocked, np.nan, z)
    finite = z[np.isfinite(z)]
    limit = float(np.abs(finite).max()) if finite.size else 1.0
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, colorscale=DIVERGING, zmin=-limit, zmax=limit,
        hoverongaps=False, colorbar=dict(thickness=14),
        hovertemplate="query %{y} → key %{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title=_title(title))
    return _square_axes(fig, labels, "rows = queries, columns = keys"
                        + ("; grey = −∞ (masked)" if blocked.any() else ""), True, max_width)


def _on_off_matrix(off, labels: list[str], title: str, subtitle: str, on_text: str,
                   off_text: str, hover, max_width: int | None) -> go.Figure:
    """A [q_pos, k_pos] matrix of two values: `off` cells grey (MASKED_GREY, the colour of a
    masked cell everywhere), the others white; each cell says its value when there is room."""
    n = len(labels)
    small = n <= MASK_TEXT_LIMIT
    text = np.where(off, off_text, on_text) if small else None
    fig = go.Figure(go.Heatmap(
        z=off.astype(np.float32), x=labels, y=labels, zmin=0, zmax=1, showscale=False,
        colorscale=[[0, "#ffffff"], [1, MASKED_GREY]], text=text,
        texttemplate="%{text}" if small else None, textfont=dict(size=11, color="#222"),
        customdata=hover, hovertemplate="query %{y} → key %{x}: %{customdata}<extra></extra>",
        xgap=1 if small else 0, ygap=1 if small else 0))
    fig.update_layout(title=_title(title))
    return _square_axes(fig, labels, subtitle, False, max_width)


def mask_matrix(bias, tokens, title: str = "The mask M", max_width: int | None = None
                ) -> go.Figure:
    """The additive mask [q_pos, k_pos] as a matrix of 0 (may attend) and −∞ (blocked, grey)."""
    z, labels = _square(bias, tokens, "mask")
    blocked = z <= BLOCKED
    return _on_off_matrix(
        blocked, labels, title, "rows = queries, columns = keys; " + (
            "grey = −∞, the key is hidden from the query" if blocked.any() else
            "all 0: no key is hidden from any query"), "0", "−∞",
        np.where(blocked, "−∞ (blocked)", "0 (allowed)"), max_width)


def allowed_matrix(attention_mask, tokens, causal: bool = True, title: str = "Who may attend",
                   max_width: int | None = None) -> go.Figure:
    """The padding mask [pos] (1 = real token) and, for a decoder, the causal mask together:
    1 where query i may attend to key j, 0 (grey) where it may not, and the hover says why."""
    real = to_numpy(attention_mask, "attention_mask", 1, dtype=np.int64).astype(bool)
    labels = axis_labels(tokens)
    if real.size != len(labels):
        raise ValueError(f"attention_mask needs one entry per token ({len(labels)}), got "
                         f"{real.size}")
    n = len(labels)
    later = np.triu(np.ones((n, n), dtype=bool), k=1) if causal else np.zeros((n, n), bool)
    padding = np.broadcast_to(~real, (n, n))
    why = np.where(later, "0: the key comes after the query (causal)",
                   np.where(padding, "0: the key is padding", "1: may attend"))
    return _on_off_matrix(
        later | padding, labels, title, "rows = queries, columns = keys; 1 = may attend, "
        "grey 0 = blocked" + ("; causal: keys after the query" if causal else "")
        + ("; padding: keys that are padding" if padding.any() else ""), "1", "0", why,
        max_width)


def _ordinal(n: int) -> str:
    """2 -> "2nd", 4 -> "4th", 11 -> "11th", 23 -> "23rd"."""
    end = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{end}"


def activation_scatter(before, after, title: str, curve=None, window: float | None = None,
                       name: str = "the activation") -> go.Figure:
    """The real numbers before and after the activation, as points (a sample when many).
    `curve` = (x, y) draws the function itself as a line over them; `window` fixes both
    axes to the inputs in [-window, window] (the caller passes only the points there)."""
    x = to_numpy(before, "before", 1)
    y = to_numpy(after, "after", 1)
    if x.shape != y.shape:
        raise ValueError(f"before and after must have one shape, got {x.shape} and {y.shape}")
    step = max(1, x.size // MAX_SCATTER_POINTS)
    fig = go.Figure()
    fig.add_trace(go.Scattergl(x=x[::step], y=y[::step], mode="markers", name="your numbers",
                               marker=dict(size=5, opacity=0.5, color="#2E91E5"),
                               hovertemplate="in %{x:.3f} → out %{y:.3f}<extra></extra>"))
    # the function's own line on top of the dots, which cover it where they are dense
    if curve is not None:
        cx, cy = (to_numpy(c, "curve", 1) for c in curve)
        fig.add_trace(go.Scattergl(x=cx, y=cy, mode="lines", name=name,
                                   line=dict(color="#444444", width=1.5),
                                   hovertemplate="%{x:.2f} → %{y:.3f}<extra></extra>"))
    sample = f"every {_ordinal(step)} of {x.size:,} numbers" if step > 1 else \
        f"all {x.size:,} numbers"
    if window is not None:
        sample += f" between −{window:g} and {window:g}"
    xaxis = dict(title=dict(text="before (up-projection)"), zeroline=True)
    yaxis = dict(title=dict(text="after the activation"), zeroline=True)
    if window is not None:
        low = min(0.0, float(y.min()) if y.size else 0.0,
                  float(np.min(cy)) if curve is not None else 0.0)
        xaxis["range"] = [-window * 1.02, window * 1.02]
        yaxis["range"] = [low - 0.05 * window, window * 1.02]
    fig.update_layout(template=TEMPLATE, height=420, title=_title(title, sample),
                      xaxis=xaxis, yaxis=yaxis, showlegend=curve is not None,
                      legend=dict(orientation="h", yanchor="top", y=-0.18, x=0))
    return fig


def layer_stack_heatmap(norms, tokens, title: str) -> go.Figure:
    """[n_layers + 1, pos] vector lengths: row 0 the embeddings, row ℓ+1 after layer ℓ."""
    z = to_numpy(norms, "norms", ndim=2)
    labels = axis_labels(tokens)
    if z.shape[1] != len(labels):
        raise ValueError(f"norms must have one column per token ({len(labels)}), got {z.shape}")
    rows = ["embeddings"] + [f"after layer {i}" for i in range(z.shape[0] - 1)]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=rows, colorscale=COLORSCALE,
                               colorbar=dict(title=dict(text="‖x‖"), thickness=14),
                               hovertemplate="%{y}, %{x}: ‖x‖ = %{z:.2f}<extra></extra>"))
    fig.update_layout(title=_title(title, "length of each token's vector in the residual "
                                   "stream"))
    fig = _axes(fig, len(rows), "token", "")
    fig.update_layout(height=int(min(600, 160 + 30 * len(rows))))
    return fig


def top_tokens_bar(tokens: list[str], probs, title: str) -> go.Figure:
    """Horizontal bars, the most likely next token on top, ranked from 1 and written as
    percentages the way the Generate page writes them ("61%", "< 0.01%")."""
    p = to_numpy(probs, "probs", 1)
    if len(tokens) != p.size:
        raise ValueError(f"one probability per token: {len(tokens)} tokens, {p.size} values")
    byte_level = looks_byte_level(tokens)
    labels = [f"{i + 1}. {token_label(t, byte_level)}" for i, t in enumerate(tokens)]
    fig = go.Figure(go.Bar(x=p, y=labels, orientation="h", marker_color="#2E91E5",
                           text=[percent(v) for v in p], textposition="outside",
                           cliponaxis=False, hovertemplate="%{y}: %{x:.2%}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, height=int(160 + 28 * len(labels)),
                      title=_title(title, "rank. token (1 = most likely)"),
                      xaxis=dict(title=dict(text="probability"), tickformat=".0%",
                                 range=[0, min(1.0, p.max() * 1.25 + 1e-9)]),
                      yaxis=dict(autorange="reversed", type="category"))
    return fig


# A long axis opens on its first WINDOW_CELLS entries: cells of about 15 px on the narrowest
# plot (NARROWEST_PLOT_PX: an 800 px window with the sidebar open), where all 325 would be 1 px
# slivers. An axis whose every cell is at least MIN_CELL_PX there (the Attention page's
# readable minimum) opens whole: a 22-character sentence is shown to its last character.
WINDOW_CELLS, NARROWEST_PLOT_PX = 20, 300
WHOLE_CELLS = NARROWEST_PLOT_PX // MIN_CELL_PX  # 37
ZOOMED = {"values": "xy", "allowed": "xy", "scores": "xy", "mask": "xy", "pattern": "xy",
          "stack": "x"}  # which axes of each step figure hold tokens or features


def open_on_start(fig: go.Figure, kind: str) -> go.Figure:
    """Open a step figure (`kind` as in ZOOMED) whose axes hold more than WHOLE_CELLS entries
    on the first WINDOW_CELLS, labelled, with drag to move and double-click to see all; the
    subtitle says what is shown. Other figures are returned as they are."""
    axes = ZOOMED.get(kind, "")
    if not axes or not fig.data or getattr(fig.data[0], "z", None) is None:
        return fig
    n_y, n_x = np.asarray(fig.data[0].z).shape
    parts = []
    if "x" in axes and n_x > WHOLE_CELLS:
        fig.update_xaxes(range=[-0.5, WINDOW_CELLS - 0.5], autorange=False, showticklabels=True)
        parts.append(f"the first {WINDOW_CELLS} of {n_x} columns")
    if "y" in axes and n_y > WHOLE_CELLS:
        fig.update_yaxes(range=[WINDOW_CELLS - 0.5, -0.5], autorange=False, showticklabels=True)
        parts.append(f"the first {WINDOW_CELLS} of {n_y} rows")
    if parts:
        lines = wrap_lines("showing " + " and ".join(parts) + ": drag to move, double-click "
                           "to see all")
        old = fig.layout.title.subtitle.text or ""
        fig.layout.title.subtitle.text = "<br>".join(([old] if old else [])
                                                     + [html.escape(t) for t in lines])
        fig.update_layout(dragmode="pan",
                          margin=dict(t=(fig.layout.margin.t or 80) + 16 * len(lines)))
    return fig
