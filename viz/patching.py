"""Figures for activation patching: the residual stream grid (rows = where in the stack,
columns = positions). Pure plotly: arrays and labels in, a Figure out. The layer × head grid
is `viz.heads.head_grid`.

Values are the metric recovered: 0 = the corrupted run, 1 = the clean run. The colour scale is
fixed from 0 (white) to 1 (red), negative values blue, so two grids read the same way.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .labels import token_label
from .style import (DIVERGING, TEMPLATE, check_tokens, escape, label_margins, subtitle_block,
                    to_numpy)

MAX_TICKS = 24  # beyond this many positions only every k-th one is labelled (and the marked)
THIN_ABOVE = 16  # more position labels than this: no two neighbours labelled (800 px wide)


def position_labels(clean_tokens, corrupted_tokens, byte_level: bool = False) -> list[str]:
    """One HTML-safe label per position: "3·cat", or "3·cat→dog" where the prompts differ."""
    clean = check_tokens(clean_tokens, "clean_tokens")
    corrupted = check_tokens(corrupted_tokens, "corrupted_tokens")
    if len(clean) != len(corrupted):
        raise ValueError(f"the prompts must have the same length, got {len(clean)} and "
                         f"{len(corrupted)} tokens")
    labels = []
    for i, (a, b) in enumerate(zip(clean, corrupted)):
        text = token_label(a, byte_level)
        if a != b:
            text += "→" + token_label(b, byte_level)
        labels.append(f"{i}·{text}")
    return labels


def _scale(z: np.ndarray) -> dict:
    finite = z[np.isfinite(z)]
    low = min(-0.25, float(finite.min())) if finite.size else -0.25
    high = max(1.0, float(finite.max())) if finite.size else 1.0
    top = max(high, -low)
    return dict(colorscale=DIVERGING, zmid=0, zmin=-top, zmax=top)


def residual_grid(values, labels, row_names, title: str, subtitle: str = "",
                  marked_pos: int | None = None, marked_cols=()) -> go.Figure:
    """values: [rows, pos] metric recovered by patching the residual stream at (row, pos);
    labels: [pos] position labels (`position_labels`); row_names: [rows] plain text, top row
    first (the input of block 0). marked_pos: a column to outline (where the metric is read).
    marked_cols: columns whose labels are always shown (where the prompts differ), even when
    the other labels are thinned out (unless there are many of them).
    """
    z = to_numpy(values, "values", ndim=2, dtype=np.float64)
    n_rows, n_pos = z.shape
    labels = check_tokens(labels, "labels")
    rows = [escape(r) for r in check_tokens(row_names, "row_names")]
    if len(labels) != n_pos or len(rows) != n_rows:
        raise ValueError(f"values are {n_rows} rows × {n_pos} positions but there are "
                         f"{len(rows)} row names and {len(labels)} labels")
    step = max(1, -(-n_pos // MAX_TICKS))
    cols = [int(i) for i in marked_cols if 0 <= int(i) < n_pos]
    keep = (set(cols) if len(cols) <= MAX_TICKS // 3 else set()) | (
        {marked_pos} if marked_pos is not None and 0 <= marked_pos < n_pos else set())
    ticks = sorted(keep | {t for t in range(0, n_pos, step)
                           if not any(0 < abs(t - k) < step for k in keep)})
    if step == 1 and len(ticks) > THIN_ABOVE:  # neighbours' slanted labels would overlap
        ticks = _no_neighbours(ticks, keep, marked_pos)
    custom = [[[rows[r], labels[p]] for p in range(n_pos)] for r in range(n_rows)]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(n_pos)), y=list(range(n_rows)), customdata=custom, xgap=1, ygap=1,
        texttemplate="%{z:.2f}" if n_pos * n_rows <= 160 and n_pos <= 14 else None,
        hoverongaps=False,  # no font size: plotly fits it to the cell, so numbers never touch
        hovertemplate="%{customdata[0]}, position %{customdata[1]}<br>recovered: %{z:.3f}"
                      "<extra></extra>",
        colorbar=dict(title=dict(text="recovered"), thickness=14), **_scale(z)))
    if marked_pos is not None and 0 <= marked_pos < n_pos:
        fig.add_shape(type="rect", x0=marked_pos - 0.5, x1=marked_pos + 0.5, y0=-0.5,
                      y1=n_rows - 0.5, line=dict(color="black", width=2))
    sub, top = subtitle_block(subtitle)
    margin = label_margins(rows, [labels[t] for t in ticks],
                           x_angle=90 if n_pos > MAX_TICKS else 60)
    margin["l"] = max(20, margin["l"] - 40)  # no y-axis title: the row names say it
    fig.update_layout(
        template=TEMPLATE, dragmode=False, margin=dict(t=top, r=30, **margin),
        title=dict(text=escape(title), subtitle=dict(text=sub)),
        height=int(top + margin["b"] + max(180, 44 * n_rows)),
        xaxis=dict(title=dict(text="position (clean token→corrupted token where they differ)"),
                   tickmode="array", tickvals=ticks, ticktext=[labels[t] for t in ticks],
                   tickangle=-90 if n_pos > MAX_TICKS else -60, range=[-0.5, n_pos - 0.5], showgrid=False, zeroline=False),
        yaxis=dict(tickmode="array", tickvals=list(range(n_rows)), ticktext=rows,
                   range=[n_rows - 0.5, -0.5], showgrid=False, zeroline=False),
    )
    return fig


def _no_neighbours(ticks: list[int], keep: set, marked_pos: int | None) -> list[int]:
    """About every other tick, no two neighbours in the list: the read position (marked_pos)
    first, then the changed ones (keep), then every other one. The hover names them all."""
    order = sorted(range(len(ticks)),
                   key=lambda j: (ticks[j] != marked_pos, ticks[j] not in keep, j % 2, j))
    shown: set[int] = set()
    for j in order:
        if j - 1 not in shown and j + 1 not in shown:
            shown.add(j)
    return [ticks[j] for j in sorted(shown)]
