"""What a user sees while the server is busy with other people's runs (ui/gate.py)."""

from __future__ import annotations

import streamlit as st

from analysis.pace import Span

from .time_words import span_words


class BusyLine:
    """One line at the top of the page, updated while this run waits for its turn; an
    on_wait callback for RunQueue.slot. Until it is needed it is an empty placeholder."""

    def __init__(self) -> None:
        self._placeholder = st.empty()
        self._shown: str | None = None

    def __call__(self, place: int, wait: Span) -> None:
        text = (f"The server is busy with other people's runs. Yours is number {place} in line "
                f"and should start in {span_words(wait)}.")
        if text != self._shown:
            self._shown = text
            self._placeholder.info(text, icon=":material/hourglass_top:")

    def clear(self) -> None:
        if self._shown is not None:
            self._placeholder.empty()
