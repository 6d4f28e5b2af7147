"""The patching page's residual grid on a long prompt: it opens on the positions that matter
(where the prompts differ and where the answer is read), with a switch to see every position.
The columns are chosen by viz.patching.zoom_columns; this module holds the switch and its
words."""

from __future__ import annotations

import streamlit as st

from ui.view_state import page_view
from viz.patching import GAP, zoom_columns

VIEW = page_view("patching")
EVERY_HELP = ("The grid opens on the positions that matter, so each column is wide enough to "
              "read: where the two prompts differ, where the answer is read, and a few "
              "positions beside them. Switch on to draw every position (narrow columns: hover "
              "for each).")


def grid_columns(n_pos: int, changed, read_pos: int | None, row_names, key: str,
                 switch: bool = True) -> tuple[list[int | None] | None, str]:
    """The columns to draw (None: every position) and a line for the figure's subtitle, with
    the switch that shows every position when the grid opens zoomed. `key`: the switch's
    widget key (the prompts' grid keeps its state in the page's view, so a link keeps it).
    Without `switch` (a lesson step's figure) the session's choice holds, drawn nowhere."""
    columns = zoom_columns(n_pos, changed, read_pos, row_names)
    if columns is None:
        return None, ""
    if key == VIEW.key("all"):
        VIEW.setdefault("all")
    every = st.toggle(f"Show every position (all {n_pos})", key=key, help=EVERY_HELP) \
        if switch else bool(st.session_state.get(key))
    if every:
        return None, f"all {n_pos} positions: narrow columns, hover for each"
    shown = sum(p is not GAP for p in columns)
    return columns, (f"zoomed: {shown} of {n_pos} positions, where the prompts differ "
                     "(dotted orange) and where the answer is read; ⋯ = positions left out")
