"""How many tokens a heatmap can show readably in a column of a given width, and which of
their labels fit: the rule behind the attention page's window and its thinned tick labels.

A cell is never narrower than MIN_CELL_PX. Tick labels are cut to TICK_CHARS characters (hover
shows the whole label), and every step-th is written so neighbours keep a font's height (plus a
pixel) apart across their slant: y labels are written across the axis, x labels slanted 60°.
The sizes are the ones the figure is drawn at: `heatmap_size` within the column (Streamlit
would narrow a wider figure to it), or, in projector mode, `room_size` (viz/style.py) and the
column it is then narrowed to.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from .labels import SEPARATOR, looks_byte_level, visible_text
from .style import (COLORBAR_MARGIN, ROOM_SCALE, TEMPLATE_TOP, heatmap_size, label_margins,
                    room_size, tick_step)

MIN_CELL_PX = 8  # no heatmap cell narrower than this (a readable minimum)
TICK_CHARS = 12  # a tick label is cut to this many characters ("…"); hover shows the whole
TICK_FONT_PX = 13  # the template's font, which tick labels use
X_ANGLE = 60  # x tick labels are slanted this far from the axis


def tick_text(label: str) -> str:
    """An (escaped) axis label cut to TICK_CHARS characters, still escaped."""
    text = html.unescape(label)
    if len(text) > TICK_CHARS:
        text = text[: TICK_CHARS - 1] + "…"
    return html.escape(text, quote=False)


def whole_labels(tokens) -> list[str]:
    """Like `axis_labels`, but never cut: "4·averyveryverylongtoken", for hover text."""
    byte_level = looks_byte_level(tokens)
    return [f"{i}{SEPARATOR}{html.escape(visible_text(t, byte_level), quote=False)}"
            for i, t in enumerate(tokens)]


def tick_margins(q_labels, k_labels) -> dict:
    """Left and bottom margins of a heatmap whose tick labels are cut by `tick_text`."""
    return label_margins([tick_text(q) for q in q_labels], [tick_text(k) for k in k_labels],
                         X_ANGLE)


def heatmap_margins(labels) -> dict:
    """The side margins `attention_heatmap(..., tick_every=...)` gives a map of these labels
    on both axes (its colour bar on the right)."""
    return dict(tick_margins(labels, labels), r=COLORBAR_MARGIN)


@dataclass(frozen=True)
class Fit:
    """A heatmap of `n` tokens a side as drawn: its cells' width and height in px, and which
    labels it writes (every x_step-th along the bottom, every y_step-th down the side)."""

    n: int
    cell_x: float
    cell_y: float
    x_step: int
    y_step: int

    @property
    def readable(self) -> bool:
        return min(self.cell_x, self.cell_y) >= MIN_CELL_PX * (1 - 1e-9)


def drawn_cells(n: int, column_px: float, margin: dict, projector: bool = False
                ) -> tuple[float, float]:
    """(width, height) in px of a cell of an n × n heatmap drawn in a column `column_px` wide:
    sized by `heatmap_size` capped at the column, then, in projector mode, by `room_size` and
    narrowed to the column again when wider (its height kept)."""
    margin = dict(margin, t=TEMPLATE_TOP)
    size = heatmap_size(n, n, margin, max_width=int(column_px))
    if not projector:
        plot_w = min(size["width"], column_px) - margin["l"] - margin["r"]
        return plot_w / n, (size["height"] - margin["t"] - margin["b"]) / n
    room = room_size(size["width"], size["height"], margin)
    big = room["margin"]
    plot_w = min(room["width"], column_px) - big["l"] - big["r"]
    return plot_w / n, (room["height"] - big["t"] - big["b"]) / n


def fit(n: int, column_px: float, margin: dict, projector: bool = False) -> Fit:
    """The cells and label steps of an n × n heatmap in a column `column_px` wide."""
    cell_x, cell_y = drawn_cells(n, column_px, margin, projector)
    font = TICK_FONT_PX * (ROOM_SCALE if projector else 1)
    need = font + 1
    return Fit(n, cell_x, cell_y, tick_step(cell_x, need, X_ANGLE), tick_step(cell_y, need, 90))


def most_tokens(n_total: int, column_px: float, margin: dict, projector: bool = False) -> int:
    """The most tokens (at most `n_total`, at least 1) an axis can show with every cell at
    least MIN_CELL_PX wide and high."""
    for n in range(n_total, 0, -1):
        if fit(n, column_px, margin, projector).readable:
            return n
    return 1


def ordinal(k: int) -> str:
    """2 -> "2nd", 3 -> "3rd", 11 -> "11th"."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def thinning_note(x_step: int, y_step: int) -> str:
    """One sentence stating which labels a map writes, or "" when it writes them all."""
    if x_step == 1 and y_step == 1:
        return ""
    def every(step: int) -> str:
        return "every token" if step == 1 else f"every {ordinal(step)} token"
    if x_step == y_step:
        where = f"{every(x_step)} is named on each axis"
    else:
        where = (f"{every(y_step)} is named down the side and {every(x_step)} along the "
                 "bottom")
    return (f"Not every label fits: {where}, counted from the first one shown; hover any cell "
            "for its two tokens.")
