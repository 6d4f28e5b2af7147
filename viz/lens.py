"""The logit lens as a table: rows are layers, columns positions, each cell the token the
lens ranks first there, coloured by a probability. Pure plotly."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import SEPARATOR, looks_byte_level, token_label
from .numbers import percent
from .style import (COLORSCALE, FULL_PAGE_PX, MASKED_GREY, TEMPLATE, TEMPLATE_TOP,
                    check_tokens, fitted_font_px, subtitle_block, tick_step, to_numpy)

CELL_TEXT_LIMIT = 40  # with more positions than this, cells carry colour only (hover has all)
# Cell text: as large as the cells allow on the narrowest plot (the page beside the open
# sidebar on an 800 px screen: FULL_PAGE_PX less the row names and the colour bar), at most
# CELL_FONT_MAX px. Below CELL_FONT_MIN px no size is set and plotly fits the text to each cell
# itself (so small cells get small text, never text that spills over its neighbours).
LENS_SIDES_PX = 110 + 70  # the row names' margin and the colour bar beside the plot
NARROW_PLOT_PX = FULL_PAGE_PX - LENS_SIDES_PX
CELL_FONT_MIN, CELL_FONT_MAX = 14, 18
# Column labels (13 px text, two lines: "18·a" over "→ m") on the narrowest plot: horizontal
# labels need their width, slanted ones their two lines' height, plus TICK_GAP_PX between
# neighbours; when not every column fits, only every step-th is labelled (the hover has all).
TICK_FONT_PX, TICK_CHAR_PX, TICK_LINE_PX, TICK_GAP_PX = 13, 0.65 * 13, 1.3 * 13, 6
TICK_SLANT = 60  # degrees
DETAIL_TOKEN_CHARS = 8  # a longer token is cut with "…", so the detail table fits a narrow screen


def detail_columns(row_names, top_tokens, top_probs, next_rank=None,
                   next_prob=None) -> dict[str, list[str]]:
    """The logit lens at one position as a narrow table, plain text (not escaped): column
    "layer"; one column per rank, "#1" ... "#k", whose cell holds the token and its probability
    in one ("␣ 61%"), so the table fits a narrow screen; and, when `next_rank` is given,
    "true next": the true next token's rank and probability ("#3 · 12%").

    row_names: [row]; top_tokens: [row][k] visible token strings; top_probs: [row, k];
    next_rank, next_prob: [row] (rank 1 = ranked first).
    """
    probs = to_numpy(top_probs, "top_probs", ndim=2)
    n_rows, k = probs.shape
    if len(row_names) != n_rows or len(top_tokens) != n_rows or any(
            len(r) != k for r in top_tokens):
        raise ValueError(f"expected {len(row_names)} rows of {k} tokens, got top_probs "
                         f"{list(probs.shape)} and {len(top_tokens)} rows of tokens")

    def short(token: str) -> str:
        token = str(token)
        return token if len(token) <= DETAIL_TOKEN_CHARS else token[:DETAIL_TOKEN_CHARS - 1] + "…"

    out = {"layer": [str(r) for r in row_names]}
    for i in range(k):
        out[f"#{i + 1}"] = [f"{short(top_tokens[r][i])} {percent(probs[r, i])}"
                            for r in range(n_rows)]
    if next_rank is not None:
        rank = to_numpy(next_rank, "next_rank", ndim=1, dtype=np.int64)
        nprob = to_numpy(next_prob, "next_prob", ndim=1)
        if rank.size != n_rows or nprob.size != n_rows:
            raise ValueError(f"next_rank and next_prob need {n_rows} entries, got "
                             f"{rank.size} and {nprob.size}")
        out["true next"] = [f"#{int(rank[r]):,} · {percent(nprob[r])}" for r in range(n_rows)]
    return out


def cell_font_size(labels, n_pos: int, plot_px: float = NARROW_PLOT_PX) -> int | None:
    """The in-cell font size for a lens table with `n_pos` columns whose longest cell text is
    in `labels` (HTML-escaped strings): the largest size up to CELL_FONT_MAX at which it fits
    a cell on a plot `plot_px` wide (default: the narrowest), or None (plotly's own fit) when
    that is below CELL_FONT_MIN."""
    longest = max((len(html.unescape(str(t))) for t in labels), default=1) or 1
    fit = int(fitted_font_px(plot_px / max(n_pos, 1), longest))
    size = min(CELL_FONT_MAX, fit)
    return size if size >= CELL_FONT_MIN else None


def tick_layout(labels, n_pos: int, cell_px: float = None) -> tuple[int, list[int]]:
    """How to label `n_pos` columns `cell_px` wide (default: the narrowest plot) so that
    neighbouring labels never touch: (angle in degrees, 0 or TICK_SLANT; the positions to
    label, every step-th from 0). `labels`: the tick texts, lines split by "<br>", HTML-escaped.
    Horizontal labels when they need no larger step than slanted ones."""
    cell_px = NARROW_PLOT_PX / max(n_pos, 1) if cell_px is None else cell_px
    lines = [html.unescape(str(t)).split("<br>") for t in labels] or [[""]]
    wide = max(len(part) for t in lines for part in t) * TICK_CHAR_PX + TICK_GAP_PX
    tall = max(len(t) for t in lines) * TICK_LINE_PX + TICK_GAP_PX
    flat, slanted = tick_step(cell_px, wide), tick_step(cell_px, tall, TICK_SLANT)
    angle, step = (0, flat) if flat <= slanted else (TICK_SLANT, slanted)
    return angle, list(range(0, n_pos, step))


def _columns(input_tokens, first_position: int, byte_level: bool) -> list[str]:
    return [f"{first_position + i}{SEPARATOR}{token_label(t, byte_level)}"
            for i, t in enumerate(input_tokens)]


def _tick_texts(columns, next_tokens, byte_level: bool) -> list[str]:
    """Each column's label: its position and token, and below it the true next token."""
    return [f"{c}<br>→ {token_label(t, byte_level)}" if t else c
            for c, t in zip(columns, next_tokens)]


def labelled_width(tokens, start: int, limit: int, plot_px: float = NARROW_PLOT_PX) -> int:
    """How many positions from `start` (at most `limit`, at least 1) the lens table can show
    with every column labelled (token and true next token, no two labels touching) on a plot
    `plot_px` wide (default: the narrowest)."""
    byte_level = looks_byte_level(list(tokens))
    best = 1
    for width in range(1, min(limit, len(tokens) - start) + 1):
        shown = tokens[start:start + width]
        nexts = [tokens[p + 1] if p + 1 < len(tokens) else ""
                 for p in range(start, start + width)]
        labels = _tick_texts(_columns(shown, start, byte_level), nexts, byte_level)
        if len(tick_layout(labels, width, plot_px / width)[1]) == width:
            best = width
    return best


def lens_table(row_names, input_tokens, top_tokens, top_probs, next_tokens, next_rank,
               next_prob, colour: str = "top", title: str = "Logit lens",
               first_position: int = 0, plot_px: float = NARROW_PLOT_PX) -> go.Figure:
    """A heatmap table of the logit lens over a window of positions.

    row_names: [row] plain text ("embeddings", "after layer 0", ...).
    input_tokens: [pos] the tokens at these positions (column labels, numbered from
    `first_position`, so a window keeps the text's own positions).
    top_tokens: [row][pos][k] the lens's top-k token strings; top_probs: [row, pos, k].
    next_tokens: [pos] the true next token string ("" where there is none);
    next_rank: [row, pos] (1 = ranked first; 0 = no next token); next_prob: [row, pos].
    colour "top" colours a cell by the top token's probability, "next" by the probability of
    the true next token. Rows go top-down from the embeddings to the last layer. `plot_px`:
    how wide the plot is drawn (default: the narrowest page), for the cell text and labels.
    """
    rows = [html.escape(str(r), quote=False) for r in row_names]
    input_tokens = check_tokens(input_tokens, "input_tokens")
    probs = to_numpy(top_probs, "top_probs", ndim=3)
    rank = to_numpy(next_rank, "next_rank", ndim=2, dtype=np.int64)
    nprob = to_numpy(next_prob, "next_prob", ndim=2)
    n_rows, n_pos, k = probs.shape
    shape_ok = (len(rows) == n_rows and len(input_tokens) == n_pos and len(next_tokens) == n_pos
                and rank.shape == nprob.shape == (n_rows, n_pos) and len(top_tokens) == n_rows
                and all(len(r) == n_pos and all(len(c) == k for c in r) for r in top_tokens))
    if not shape_ok:
        raise ValueError(
            f"expected {len(rows)} rows × {len(input_tokens)} positions × k: top_probs "
            f"{list(probs.shape)}, next_rank {list(rank.shape)}, next_prob {list(nprob.shape)}, "
            f"{len(next_tokens)} next tokens")
    if colour not in ("top", "next"):
        raise ValueError(f"colour must be 'top' or 'next', got {colour!r}")
    everything = [t for r in top_tokens for c in r for t in c] + list(input_tokens)
    byte_level = looks_byte_level(everything)
    columns = _columns(input_tokens, first_position, byte_level)

    def lab(t: str) -> str:
        return token_label(t, byte_level)

    cell = [[lab(top_tokens[r][p][0]) for p in range(n_pos)] for r in range(n_rows)]
    hover = []
    for r in range(n_rows):
        line = []
        for p in range(n_pos):
            tops = "<br>".join(f"{i + 1}. {lab(top_tokens[r][p][i])}  {probs[r, p, i]:.3f}"
                               for i in range(k))
            truth = (f"<br>true next: {lab(next_tokens[p])}, rank {rank[r, p]:,}, "
                     f"p = {nprob[r, p]:.3g}" if rank[r, p] > 0 else "<br>(last token: no next)")
            line.append(f"<b>{rows[r]}</b>, position {columns[p]}<br>{tops}{truth}")
        hover.append(line)
    z = probs[:, :, 0] if colour == "top" else nprob
    fig = go.Figure(go.Heatmap(
        z=z, x=columns, y=rows, text=cell, customdata=hover, colorscale=COLORSCALE, zmin=0,
        zmax=1, xgap=1, ygap=1, hoverongaps=False,
        texttemplate="%{text}" if n_pos <= CELL_TEXT_LIMIT else None,
        textfont=dict(size=cell_font_size([t for row in cell for t in row], n_pos, plot_px)),
        colorbar=dict(title=dict(text="p(top)" if colour == "top" else "p(true next)"),
                      thickness=14),
        hovertemplate="%{customdata}<extra></extra>",
    ))
    tick_text = _tick_texts(columns, next_tokens, byte_level)
    angle, ticks = tick_layout(tick_text, n_pos, plot_px / max(n_pos, 1))
    sub, top = subtitle_block(  # the figure spans the page
        "cell = the token the lens ranks first; colour = "
        + ("its probability" if colour == "top" else "probability of the true next token")
        + "; column = input position, with the true next token below it", figure_px=FULL_PAGE_PX)
    fig.update_layout(
        template=TEMPLATE, plot_bgcolor=MASKED_GREY,
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=sub)),
        height=int(min(1000, max(360, 190 + 38 * n_rows))) + top - TEMPLATE_TOP,
        xaxis=dict(type="category", tickmode="array", tickvals=[columns[p] for p in ticks],
                   ticktext=[tick_text[p] for p in ticks], tickangle=-angle, side="bottom",
                   showticklabels=n_pos <= 150),
        yaxis=dict(type="category", autorange="reversed"),
        margin=dict(l=110, b=110, t=top),
    )
    return fig
