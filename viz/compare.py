"""Comparing two inputs: the difference of one head's attention on two texts of equal length.
Pure plotly."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .attention import masked_cells, window_ticks
from .labels import SEPARATOR, looks_byte_level, token_label
from .style import (COLORBAR_MARGIN, DIVERGING, MASKED_GREY, ROWS_ARE_QUERIES, TEMPLATE,
                    check_tokens, heatmap_size, label_margins, subtitle_block, to_numpy)

TICK_LABEL_LIMIT = 150
ZOOM_ABOVE = 40  # a map of more tokens opens zoomed on the changed positions...
ZOOM_CONTEXT = 15  # ...and this many tokens either side of them
WORD_MAX = 20  # a character model's change is named by its whole word when no longer than this


def changed_runs(tokens_a, tokens_b) -> list[tuple[int, int]]:
    """The (first, last) positions of each run of consecutive positions whose tokens differ."""
    runs: list[tuple[int, int]] = []
    for i, (a, b) in enumerate(zip(tokens_a, tokens_b)):
        if a == b:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _joined(tokens) -> str:
    pieces = [token_label(t, looks_byte_level(tokens)) for t in tokens]
    return ("" if all(len(p) == 1 for p in pieces) else " ").join(pieces)


def _whole_word(tokens_a, tokens_b, run: tuple[int, int]) -> tuple[int, int]:
    """A run of changed characters widened to the letters around it in both texts; the run
    itself when that "word" is longer than WORD_MAX (a text without spaces, "abcabc…", would
    otherwise be named whole)."""
    def letter(i: int) -> bool:
        return tokens_a[i].isalnum() and tokens_b[i].isalnum()
    first, last = run
    while first > 0 and letter(first - 1):
        first -= 1
    while last < len(tokens_a) - 1 and letter(last + 1):
        last += 1
    return (first, last) if last - first + 1 <= WORD_MAX else run


def describe_changes(tokens_a, tokens_b, limit: int = 3) -> str:
    """Plain text naming what changed, from the tokens: "token 6: “sentence” → “paragraph”",
    "tokens 10–12: “dog” → “cat”" (for a character model, the whole words around the changed
    characters); at most `limit` runs, then "and N more". "" when none."""
    runs = changed_runs(tokens_a, tokens_b)
    if all(len(t) == 1 for t in list(tokens_a) + list(tokens_b)):  # characters: whole words
        runs = list(dict.fromkeys(_whole_word(tokens_a, tokens_b, run) for run in runs))
    parts = []
    for first, last in runs[:limit]:
        where = f"token {first}" if first == last else f"tokens {first}–{last}"
        parts.append(f"{where}: “{_joined(tokens_a[first:last + 1])}” → "
                     f"“{_joined(tokens_b[first:last + 1])}”")
    if len(runs) > limit:
        parts.append(f"and {len(runs) - limit} more")
    return "; ".join(parts)


def zoom_window(tokens_a, tokens_b, context: int = ZOOM_CONTEXT) -> tuple[int, int] | None:
    """(first, last) positions to open a long map on: the changed positions and `context`
    tokens either side. None when the map is short (ZOOM_ABOVE tokens or fewer), nothing
    changed, or the window would be the whole map."""
    n = len(tokens_a)
    runs = changed_runs(tokens_a, tokens_b)
    if n <= ZOOM_ABOVE or not runs:
        return None
    first, last = max(0, runs[0][0] - context), min(n - 1, runs[-1][1] + context)
    return None if (first, last) == (0, n - 1) else (first, last)


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
    window = zoom_window(tokens_a, tokens_b)
    long = n > TICK_LABEL_LIMIT and window is None
    fig = go.Figure(go.Heatmap(
        z=diff, x=labels, y=labels, colorscale=DIVERGING, zmid=0, zmin=-top, zmax=top,
        hoverongaps=False, colorbar=dict(title=dict(text="B − A"), thickness=14),
        hovertemplate="query %{y} → key %{x}: %{z:+.3f}<extra></extra>",
    ))
    note = ROWS_ARE_QUERIES + "; red: B attends more, blue: A attends more"
    if window:
        note += (f"; zoomed on tokens {window[0]}–{window[1]}, around the change "
                 f"(double-click to see all {n})")
    sized = labels if not window else labels[window[0]:window[1] + 1]  # sized by its window
    margin = dict(r=COLORBAR_MARGIN, t=0, pad=0,
                  **label_margins(sized, sized, 60, not long, not long))
    size = heatmap_size(len(sized), len(sized), margin, max_width)  # not by the top margin
    subtitle, margin["t"] = subtitle_block(note, figure_px=size["width"])
    size = heatmap_size(len(sized), len(sized), margin, max_width)
    fig.update_layout(
        template=TEMPLATE, plot_bgcolor=MASKED_GREY, margin=margin,
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=subtitle)),
        **size,
        xaxis=dict(title=dict(text="key"), type="category", tickangle=-60,
                   showticklabels=not long),
        yaxis=dict(title=dict(text="query"), type="category", autorange="reversed",
                   showticklabels=not long),
    )
    if window:
        first, last = window[0] - 0.5, window[1] + 0.5
        fig.update_layout(xaxis=dict(range=[first, last], autorange=False),
                          yaxis=dict(range=[last, first], autorange=False))
    if not long:
        _label_changes(fig, labels, window or (0, n - 1), margin, tokens_a, tokens_b)
    return fig


def _label_changes(fig: go.Figure, labels, shown: tuple[int, int], margin: dict, tokens_a,
                   tokens_b) -> None:
    """Label the `shown` positions as a zoomed attention map does (`window_ticks`): all when
    they fit, else every step-th, always with the changed positions, so a thinning (plotly's
    own, or projector mode's) never drops the change."""
    changed = [i for first, last in changed_runs(tokens_a, tokens_b)
               for i in range(first, last + 1)]
    plot_px = min(fig.layout.width - margin["l"] - margin["r"],
                  fig.layout.height - margin["t"] - margin["b"])
    for axis, angle in (("xaxis", 60), ("yaxis", 90)):
        ticks = [labels[i] for i in window_ticks(shown, plot_px, changed, angle, len(labels))]
        fig.update_layout({axis: dict(tickmode="array", tickvals=ticks, ticktext=ticks)})
