"""The attention page's window: which tokens its heatmap shows, so no cell is narrower than a
readable minimum on the reader's screen, and which labels it writes (viz/heatmap_fit.py).

The window is a declared setting of the page (`window`, "120-180" in a link, teaching/pages.py)
holding what the reader or a link asked for; unset, the map shows the whole text when it fits,
else its first tokens that fit. A window wider than fits is narrowed from its first token, and
the page says so. The slider moves it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import streamlit as st

from ui import projector
from ui.column_width import column_width
from viz.heatmap_fit import MIN_CELL_PX, Fit, fit, heatmap_margins, most_tokens, thinning_note
from viz.style import FULL_PAGE_PX, ROOM_NARROW_PX

SLIDER_KEY = "attn_window_slider"  # the slider's own key; the setting holds "first-last"
_WINDOW = re.compile(r"\s*(\d{1,6})\s*[-–]\s*(\d{1,6})\s*")


def parse_window(text) -> tuple[int, int] | None:
    """"120-180" (or "120–180") -> (120, 180); None for anything else or a reversed range."""
    match = _WINDOW.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    first, last = int(match.group(1)), int(match.group(2))
    return (first, last) if first <= last else None


def window_text(first: int, last: int) -> str:
    return f"{first}-{last}"


@dataclass(frozen=True)
class Window:
    """The positions first..last (inclusive) the map shows, how it is drawn, and what to say."""

    first: int
    last: int
    most: int  # the most tokens that fit this screen at once
    column: int  # the column's width (px) the map is drawn in: its widest
    fit: Fit
    whole: bool  # the whole text is shown
    note: str  # why this window (narrowed, a bad link, the screen), or ""

    def keeps(self, position: int) -> bool:
        return self.first <= position <= self.last


def choose(n_tokens: int, asked, labels, column_px: float | None, room: bool) -> Window:
    """The window for a text of `n_tokens` whose labels are `labels`, in a column
    `column_px` wide (None: not measured yet, the narrowest screen is assumed), given what
    the setting asks (`asked`: "first-last" text or None)."""
    column = column_px or (ROOM_NARROW_PX if room else FULL_PAGE_PX)
    margin = heatmap_margins(labels)
    most = most_tokens(n_tokens, column, margin, room)
    note = ""
    wanted = parse_window(asked) if asked else None
    if asked and (wanted is None or wanted[0] >= n_tokens):
        what = f"tokens {wanted[0]}–{wanted[1]}" if wanted else "a window"
        note = (f"The link asks for {what}, which this text of {n_tokens} tokens does not have "
                f"(a window is written first-last, from 0 to {n_tokens - 1}): showing the "
                "start. ")
        wanted = None
    if wanted is None:
        first, last = 0, min(n_tokens, most) - 1
    else:
        first, last = wanted[0], min(wanted[1], n_tokens - 1)
        if last - first + 1 > most:
            note += (f"Tokens {first}–{last} do not fit this screen with cells at least "
                     f"{MIN_CELL_PX} px wide: showing {first}–{first + most - 1}. ")
            last = first + most - 1
    whole = first == 0 and last == n_tokens - 1
    return Window(first, last, most, int(column), fit(last - first + 1, column, margin, room),
                  whole, note)


def _store(setting_key: str) -> None:
    first, last = st.session_state[SLIDER_KEY]
    st.session_state[setting_key] = window_text(first, last)


def window_control(container, n_tokens: int, labels, setting_key: str) -> Window:
    """Measure the column, choose the window, and (when the text does not fit whole) draw the
    slider that moves it and say why the map is zoomed."""
    width = column_width("attn_column_width")
    asked = st.session_state.get(setting_key)
    window = choose(n_tokens, asked, labels, width, projector.on())
    if window.whole and not asked:
        return window
    st.session_state[SLIDER_KEY] = (window.first, window.last)
    container.slider("Show tokens", 0, n_tokens - 1, key=SLIDER_KEY, on_change=_store,
                     args=(setting_key,),
                     help=f"The map shows at most {window.most} tokens at once here, "
                     f"so every cell is at least {MIN_CELL_PX} px wide. Drag the range to move "
                     "it; narrow it to zoom in. A link keeps it.")
    shows = (f"the map shows tokens {window.first}–{window.last}, as queries and as keys; a "
             "row adds up to less than 1 when its token also looks outside them. ")
    zoomed = "" if window.whole else (
        f"This text has {n_tokens} tokens, too many to draw readably at once on this screen: "
        if n_tokens > window.most else "Zoomed in: ") + shows
    if window.note or zoomed:
        container.caption(window.note + zoomed)
    return window


def label_note(window: Window) -> str:
    """The caption under the map about its labels ("" when every label is written)."""
    return thinning_note(window.fit.x_step, window.fit.y_step)
