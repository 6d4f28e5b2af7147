"""Comparing two inputs: the difference of one head's attention on two texts of equal length.
Pure plotly."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .attention import masked_cells
from .labels import SEPARATOR, looks_byte_level, token_label
from .style import (COLORBAR_MARGIN, DIVERGING, MASKED_GREY, ROWS_ARE_QUERIES, TEMPLATE,
                    check_tokens, heatmap_size, label_margins, subtitle_block, to_numpy)

TICK_LABEL_LIMIT = 150


def paired_labels(tokens_a, tokens_b) -> list[str]:
    """One safe, unique label per position: "3·cat" where both texts have the same token there,
    "3·cat|dog" where they differ."""
    tokens_a = check_tokens(tokens_a, "tokens_a")
    tokens_b = check_tokens(tokens_b, "tokens_b")
    if len(tokens_a) != len(tokens_b):
        raise ValueError(f"both texts need the same number of tokens, got {len(tokens_a)} "
                         f"and {len(tokens_b)}")
    byte_level = looks_byte_level(tokens_a + tokens_b)
    out = []
    for i, (a, b) in enumerate(zip(tokens_a, tokens_b)):
        la, lb = token_label(a, byte_level), token_label(b, byte_level)
        out.append(f"{i}{SEPARATOR}{la}" if a == b else f"{i}{SEPARATOR}{la}|{lb}")
    return out


def difference_heatmap(matrix_a, matrix_b, tokens_a, tokens_b, title: str = "B − A",
                       causal: bool = False, max_width: int | None = None) -> go.Figure:
    """B − A for two attention matrices [q_pos, k_pos] of the same shape, on a red/blue scale
    centred on 0 (red: B attends more, blue: A attends more). Axis labels show both tokens
    where they differ ("3·cat|dog"). causal=True greys the masked upper triangle. Sized like
    `attention_heatmap` (show it with width="content"); `max_width` caps its width."""
    a = to_numpy(matrix_a, "matrix_a", ndim=2)
    b = to_numpy(matrix_b, "matrix_b", ndim=2)
    labels = paired_labels(tokens_a, tokens_b)
    n = len(labels)
    if a.shape != (n, n) or b.shape != (n, n):
        raise ValueError(f"both matrices must be [{n}, {n}] (one row and column per token), got "
                         f"{list(a.shape)} and {list(b.shape)}")
    diff = (b - a).astype(np.float32)  # [q_pos, k_pos]
    diff[masked_cells(diff.shape, causal)] = np.nan
    finite = np.abs(diff[np.isfinite(diff)])
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    long = n > TICK_LABEL_LIMIT
    fig = go.Figure(go.Heatmap(
        z=diff, x=labels, y=labels, colorscale=DIVERGING, zmid=0, zmin=-top, zmax=top,
        hoverongaps=False, colorbar=dict(title=dict(text="B − A"), thickness=14),
        hovertemplate="query %{y} → key %{x}: %{z:+.3f}<extra></extra>",
    ))
    subtitle, top_px = subtitle_block(ROWS_ARE_QUERIES + "; red: B attends more, blue: A "
                                      "attends more")
    margin = dict(r=COLORBAR_MARGIN, t=top_px, pad=0,
                  **label_margins(labels, labels, 60, not long, not long))
    fig.update_layout(
        template=TEMPLATE, plot_bgcolor=MASKED_GREY, margin=margin,
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=subtitle)),
        **heatmap_size(n, n, margin, max_width),
        xaxis=dict(title=dict(text="key"), type="category", tickangle=-60,
                   showticklabels=not long),
        yaxis=dict(title=dict(text="query"), type="category", autorange="reversed",
                   showticklabels=not long),
    )
    return fig
