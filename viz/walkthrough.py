"""Figures for the forward-pass walkthrough: the token table, value heatmaps, scores, the mask
as a matrix of 0 and −∞, the activation curve, the layer stack and the next-token bars.

Pure functions: arrays and token lists in, `plotly.graph_objects.Figure` out. Rows of every
[q_pos, k_pos] matrix are queries, columns are keys.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import axis_labels
from .style import COLORSCALE, DIVERGING, MASKED_GREY, ROWS_ARE_QUERIES, TEMPLATE, \
    figure_height, to_numpy

BLOCKED = np.finfo(np.float32).min / 2  # the model writes −∞ as float32's minimum
MAX_VALUE_COLUMNS = 128  # value heatmaps show the first features only
MASK_TEXT_LIMIT = 16  # above this many tokens the mask cells carry no "0" / "−∞" text
MAX_SCATTER_POINTS = 4000


def _title(text: str, subtitle: str = "") -> dict:
    out = dict(text=html.escape(text, quote=False))
    if subtitle:
        out["subtitle"] = dict(text=html.escape(subtitle, quote=False))
    return out


def _square(matrix, tokens, name: str) -> tuple[np.ndarray, list[str]]:
    z = to_numpy(matrix, name, ndim=2)
    labels = axis_labels(tokens)
    if z.shape != (len(labels), len(labels)):
        raise ValueError(f"{name} must be [len(tokens), len(tokens)] = [{len(labels)}, "
                         f"{len(labels)}] (rows = queries, columns = keys), got {list(z.shape)}")
    return z, labels


def _axes(fig: go.Figure, n_rows: int, x_title: str, y_title: str, square: bool) -> go.Figure:
    fig.update_layout(
        template=TEMPLATE, height=figure_height(n_rows), plot_bgcolor=MASKED_GREY,
        xaxis=dict(title=dict(text=x_title), tickangle=-60, type="category",
                   constrain="domain", showticklabels=n_rows <= 150 or not square),
        yaxis=dict(title=dict(text=y_title), autorange="reversed", type="category",
                   constrain="domain", scaleanchor="x" if square else None,
                   showticklabels=n_rows <= 150),
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
    fig.update_layout(title=_title(title, f"rows = tokens, columns = {cut} {col_name} "
                                   f"columns; blue < 0 < red, saturated at ±{limit:.3g}"))
    return _axes(fig, len(labels), col_name, "token", square=False)


def scores_heatmap(matrix, tokens, title: str) -> go.Figure:
    """Signed scores [q_pos, k_pos]; cells the model blocked (its −∞) drawn grey."""
    z, labels = _square(matrix, tokens, "scores")
    blocked = z <= BLOCKED
    z = np.where(blocked, np.nan, z)
    finite = z[np.isfinite(z)]
    limit = float(np.abs(finite).max()) if finite.size else 1.0
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, colorscale=DIVERGING, zmin=-limit, zmax=limit,
        hoverongaps=False, colorbar=dict(thickness=14),
        hovertemplate="query %{y} → key %{x}: %{z:.3f}<extra></extra>"))
    sub = ROWS_ARE_QUERIES.split(";")[0] + ("; grey = −∞ (masked)" if blocked.any() else "")
    fig.update_layout(title=_title(title, sub))
    return _axes(fig, len(labels), "key", "query", square=True)


def mask_matrix(bias, tokens, title: str = "The mask M") -> go.Figure:
    """The additive mask [q_pos, k_pos] as a matrix of 0 (may attend) and −∞ (blocked)."""
    z, labels = _square(bias, tokens, "mask")
    blocked = z <= BLOCKED
    n = len(labels)
    text = np.where(blocked, "−∞", "0") if n <= MASK_TEXT_LIMIT else None
    fig = go.Figure(go.Heatmap(
        z=blocked.astype(np.float32), x=labels, y=labels, zmin=0, zmax=1, showscale=False,
        colorscale=[[0, "#f7fbff"], [1, "#3b3b3b"]], text=text,
        texttemplate="%{text}" if text is not None else None, textfont=dict(size=11),
        customdata=np.where(blocked, "−∞ (blocked)", "0 (allowed)"),
        hovertemplate="query %{y} → key %{x}: %{customdata}<extra></extra>",
        xgap=1 if n <= MASK_TEXT_LIMIT else 0, ygap=1 if n <= MASK_TEXT_LIMIT else 0))
    fig.update_layout(title=_title(title, "rows = queries, columns = keys; " + (
        "dark = −∞, the key is hidden from the query" if blocked.any() else
        "all 0: no key is hidden from any query")))
    return _axes(fig, n, "key", "query", square=True)


def activation_scatter(before, after, title: str) -> go.Figure:
    """The real numbers before and after the activation, as points (a sample when many)."""
    x = to_numpy(before, "before", 1)
    y = to_numpy(after, "after", 1)
    if x.shape != y.shape:
        raise ValueError(f"before and after must have one shape, got {x.shape} and {y.shape}")
    step = max(1, x.size // MAX_SCATTER_POINTS)
    fig = go.Figure(go.Scattergl(x=x[::step], y=y[::step], mode="markers",
                                 marker=dict(size=4, opacity=0.5, color="#2E91E5"),
                                 hovertemplate="in %{x:.3f} → out %{y:.3f}<extra></extra>"))
    sample = f"every {step}th of {x.size:,} numbers" if step > 1 else f"all {x.size:,} numbers"
    fig.update_layout(template=TEMPLATE, height=420, title=_title(title, sample),
                      xaxis=dict(title=dict(text="before (up-projection)"), zeroline=True),
                      yaxis=dict(title=dict(text="after the activation"), zeroline=True))
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
    fig = _axes(fig, len(rows), "token", "", square=False)
    fig.update_layout(height=int(min(600, 160 + 30 * len(rows))))
    return fig


def top_tokens_bar(tokens: list[str], probs, title: str) -> go.Figure:
    """Horizontal bars, the most likely next token on top."""
    p = to_numpy(probs, "probs", 1)
    if len(tokens) != p.size:
        raise ValueError(f"one probability per token: {len(tokens)} tokens, {p.size} values")
    labels = axis_labels(tokens)
    fig = go.Figure(go.Bar(x=p, y=labels, orientation="h", marker_color="#2E91E5",
                           text=[f"{v:.1%}" for v in p], textposition="outside",
                           hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, height=int(160 + 28 * len(labels)),
                      title=_title(title, "rank·token (rank 0 = most likely)"),
                      xaxis=dict(title=dict(text="probability"), range=[0, min(1.0, p.max()
                                                                                * 1.25 + 1e-9)]),
                      yaxis=dict(autorange="reversed", type="category"))
    return fig
