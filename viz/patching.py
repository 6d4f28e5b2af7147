"""Figures for activation patching: the residual stream grid (rows = where in the stack,
columns = positions). Pure plotly: arrays and labels in, a Figure out. The layer × head grid
is `viz.heads.head_grid`.

Values are the metric recovered: 0 = the corrupted run, 1 = the clean run. The colour scale is
fixed from 0 (white) to 1 (red), negative values blue, so two grids read the same way.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .labels import token_label
from .style import (COLORBAR_MARGIN, DIVERGING, FULL_PAGE_PX, TEMPLATE, check_tokens, escape,
                    fitted_font_px, keep_apart, label_margins, subtitle_block, tick_step,
                    to_numpy)

MAX_TICKS = 24  # beyond this many positions only every k-th one is labelled (and the marked)
# What fits is decided for the narrowest plot the app shows: the page's main column beside the
# open sidebar on an 800 px screen (FULL_PAGE_PX), less the row names and the colour bar.
# Plotly sizes cell text itself (no textfont.size): floor((cell width - gap) / (0.65 × the
# longest label's characters)), at most the page's 13 px, so a wider screen only gets larger
# text. Numbers are drawn only when that size is at least MIN_TEXT_PX on the narrowest plot.
# MIN_TEXT_PX is a font size; a digit is only about 0.7 of it tall, so 9 px text drew a
# 7 px "0.0". 13 px text (the page's own size) draws digits of about
# 9 px; below it the cells stay empty and the hover has the value.
MIN_TEXT_PX = 13
TICK_GAP_PX = 15  # neighbouring slanted tick labels at least this far apart (13 px text)
TEXT_CELLS = 400  # more cells than this: no numbers (the hover has them)
XGAP = 1  # px between cells
# A grid whose columns would be narrower than ZOOM_BELOW_PX on the narrowest plot opens zoomed:
# on the changed positions and the read one, ZOOM_CONTEXT positions either side, each column
# ZOOM_CELL_PX wide, enough for its own slanted label; "⋯" columns stand for the rest.
ZOOM_CELL_PX = TICK_GAP_PX
ZOOM_BELOW_PX = 10  # ...a grid opens zoomed only when its columns would be narrower than this
ZOOM_CONTEXT = 3
CHANGED_COLOUR = "#e08000"  # the frame round a changed position's column
GAP = None  # in a zoomed column list: the positions left out between two shown runs

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


def _left(rows: list[str]) -> int:
    return max(20, label_margins(rows, [])["l"] - 40)  # no y-axis title: the row names say it


def zoom_columns(n_pos: int, changed, read_pos: int | None, row_names,
                 context: int = ZOOM_CONTEXT) -> list[int | None] | None:
    """The columns to open a grid of `n_pos` positions on when they would not all be
    ZOOM_BELOW_PX wide on the narrowest plot (then each is ZOOM_CELL_PX wide): each changed position and the read position
    (`read_pos`, with the positions before it), `context` either side (less when that does not
    fit), in order, with GAP where positions are left out. None when every column fits."""
    rows = [escape(r) for r in check_tokens(row_names, "row_names")]
    plot_px = FULL_PAGE_PX - _left(rows) - COLORBAR_MARGIN
    if n_pos <= plot_px // ZOOM_BELOW_PX:
        return None
    fits = int(plot_px // ZOOM_CELL_PX)
    anchors = [int(c) for c in changed if 0 <= int(c) < n_pos]
    for near in range(context, -1, -1):
        keep = {p for c in anchors for p in range(c - near, c + near + 1) if 0 <= p < n_pos}
        if read_pos is not None and 0 <= read_pos < n_pos:
            keep |= set(range(max(0, read_pos - near), read_pos + 1))
        columns = _with_gaps(sorted(keep), n_pos)
        if len(columns) <= fits:
            break
    return columns if keep and len(keep) < n_pos else None


def _with_gaps(kept: list[int], n_pos: int) -> list[int | None]:
    out: list[int | None] = []
    for p in kept:
        if (out and out[-1] is not GAP and p > out[-1] + 1) or (not out and p > 0):
            out.append(GAP)
        out.append(p)
    if kept and kept[-1] < n_pos - 1:
        out.append(GAP)
    return out


def _zoomed(z: np.ndarray, labels: list[str], columns):
    """The grid's values and labels on `columns` (positions or GAP); a gap is an empty column
    labelled with how many positions it stands for."""
    shown = [p for p in columns if p is not GAP]
    gaps, out_labels = [], []
    for i, p in enumerate(columns):
        if p is GAP:
            before = next((q for q in reversed(columns[:i]) if q is not GAP), -1)
            after = next((q for q in columns[i + 1:] if q is not GAP), len(labels))
            out_labels.append(f"⋯ {after - before - 1} more")
            gaps.append(i)
        else:
            out_labels.append(labels[p])
    zz = np.full((z.shape[0], len(columns)), np.nan)
    idx = [i for i, p in enumerate(columns) if p is not GAP]
    zz[:, idx] = z[:, shown]
    return zz, out_labels, gaps


def residual_grid(values, labels, row_names, title: str, subtitle: str = "",
                  marked_pos: int | None = None, marked_cols=(),
                  columns: list[int | None] | None = None) -> go.Figure:
    """values: [rows, pos] metric recovered by patching the residual stream at (row, pos);
    labels: [pos] position labels (`position_labels`); row_names: [rows] plain text, top row
    first (the input of block 0). marked_pos: a column to outline (where the metric is read).
    marked_cols: columns whose labels are always shown (where the prompts differ), even when
    the other labels are thinned out (unless there are many of them).
    columns: draw only these positions, in this order, GAP for an empty "⋯ N more" column
    (`zoom_columns`); None: every position.
    """
    z = to_numpy(values, "values", ndim=2, dtype=np.float64)
    n_rows, n_pos = z.shape
    labels = check_tokens(labels, "labels")
    rows = [escape(r) for r in check_tokens(row_names, "row_names")]
    if len(labels) != n_pos or len(rows) != n_rows:
        raise ValueError(f"values are {n_rows} rows × {n_pos} positions but there are "
                         f"{len(rows)} row names and {len(labels)} labels")
    if columns is not None:
        where = {p: i for i, p in enumerate(columns) if p is not GAP}
        z, labels, gaps = _zoomed(z, labels, columns)
        marked_pos = where.get(marked_pos)
        marked_cols = [where[c] for c in marked_cols if c in where]
        n_pos = len(columns)
    else:
        gaps = []
    changed = [int(c) for c in marked_cols if 0 <= int(c) < n_pos]
    left = _left(rows)
    cell_px = (FULL_PAGE_PX - left - COLORBAR_MARGIN) / n_pos  # on the narrowest plot
    angle = 90 if n_pos > MAX_TICKS else 60
    groups = thin_ticks(n_pos, cell_px, angle, marked_pos, changed + gaps)
    ticks = [g[0] if len(g) == 1 else sum(g) / len(g) for g in groups]  # shared: between
    tick_text = [", ".join(labels[t] for t in g) for g in groups]
    text = cell_labels(z, cell_px)
    custom = [[[rows[r], labels[p]] for p in range(n_pos)] for r in range(n_rows)]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(n_pos)), y=list(range(n_rows)), customdata=custom, xgap=XGAP, ygap=1,
        text=text, texttemplate="%{text}" if text else None,
        hoverongaps=False,  # no font size: plotly fits it to the cell (see MIN_TEXT_PX)
        hovertemplate="%{customdata[0]}, position %{customdata[1]}<br>recovered: %{z:.3f}"
                      "<extra></extra>",
        colorbar=dict(title=dict(text="recovered"), thickness=14), **_scale(z)))
    if marked_pos is not None and 0 <= marked_pos < n_pos:
        fig.add_shape(type="rect", x0=marked_pos - 0.5, x1=marked_pos + 0.5, y0=-0.5,
                      y1=n_rows - 0.5, line=dict(color="black", width=2))
    for c in changed[:MAX_TICKS // 3]:  # where the prompts differ: a dashed orange frame
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=-0.5, y1=n_rows - 0.5,
                      line=dict(color=CHANGED_COLOUR, width=2, dash="dot"))
    sub, top = subtitle_block(subtitle)
    margin = dict(label_margins(rows, tick_text, x_angle=angle), l=left)
    fig.update_layout(
        template=TEMPLATE, dragmode=False, margin=dict(t=top, r=COLORBAR_MARGIN, **margin),
        title=dict(text=escape(title), subtitle=dict(text=sub)),
        height=int(top + margin["b"] + max(180, 44 * n_rows)),
        xaxis=dict(title=dict(text="position (clean token→corrupted token where they differ)"),
                   tickmode="array", tickvals=ticks, ticktext=tick_text,
                   tickangle=-angle, range=[-0.5, n_pos - 0.5], showgrid=False,
                   zeroline=False),
        yaxis=dict(tickmode="array", tickvals=list(range(n_rows)), ticktext=rows,
                   range=[n_rows - 0.5, -0.5], showgrid=False, zeroline=False),
    )
    return fig


def cell_labels(z: np.ndarray, cell_px: float) -> list[list[str]] | None:
    """In-cell numbers for cells `cell_px` wide on the narrowest plot: two decimals, else one,
    whichever plotly would draw at MIN_TEXT_PX or more there (it shrinks text to fit the
    cell); None when neither fits, or for more than TEXT_CELLS cells: the hover has them."""
    if z.size > TEXT_CELLS:
        return None
    for decimals in (2, 1):
        zero = format(0.0, f".{decimals}f")
        labels = [["" if not np.isfinite(v) else format(v, f".{decimals}f").replace(
            "-" + zero, zero) for v in row] for row in z.tolist()]  # no "-0.0"
        chars = max((len(t) for row in labels for t in row), default=0) or 1
        if math.floor(fitted_font_px(cell_px - XGAP, chars)) >= MIN_TEXT_PX:
            return labels
    return None


def thin_ticks(n_pos: int, cell_px: float, angle: float, marked_pos: int | None = None,
               marked_cols=()) -> list[tuple[int, ...]]:
    """The positions to label, as groups that share one tick (mostly one position each), no
    two closer than the step at which labels slanted by `angle` degrees stay TICK_GAP_PX
    apart on cells `cell_px` wide (and at most about MAX_TICKS): the read position
    (marked_pos) first, then the changed ones (marked_cols, unless there are many), then
    every step-th, then any that still fit. When no changed position fits beside the read
    one (e.g. the change is just before it), the nearest one shares its tick."""
    step = max(math.ceil(n_pos / MAX_TICKS), tick_step(cell_px, TICK_GAP_PX, angle))
    cols = [int(i) for i in marked_cols if 0 <= int(i) < n_pos]
    cols = cols if len(cols) <= MAX_TICKS // 3 else []
    shown: list[tuple[int, ...]] = []
    if marked_pos is not None and 0 <= marked_pos < n_pos:
        near = [c for c in cols if c != marked_pos and abs(c - marked_pos) < step]
        if cols and marked_pos not in cols and all(c in near for c in cols):
            nearest = min(near, key=lambda c: abs(c - marked_pos))
            shown.append(tuple(sorted((marked_pos, nearest))))
        else:
            shown.append((marked_pos,))
    shown += [(t,) for t in keep_apart(cols + list(range(0, n_pos, step)) + list(range(n_pos)),
                                       step, [s for group in shown for s in group])]
    return sorted(shown)
