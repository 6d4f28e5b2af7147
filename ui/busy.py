"""What a user sees while the server is busy with other people's runs (server/gate.py)."""

from __future__ import annotations

import streamlit as st

from analysis.pace import Span

from .time_words import clock, span_words

FEW_SECONDS = 3.0  # a wait expected to end sooner is said without a number


def when(wait: Span) -> str:
    """ "in about 8 s" once this queue's estimates have held (server/gate.RunQueue.span), "in a few
    seconds" for a short wait (no number: at the front of a burst the first estimates of short
    waits are the ones most often too low), else "within 20 s": the most the wait should take.
    A range's low end would be wrong more often than not: a burst's first runs are often far
    shorter than the queue's first guess."""
    if wait.high < FEW_SECONDS:
        return "in a few seconds"
    return f"in {span_words(wait)}" if wait.narrow else f"within {clock(wait.high)}"


class BusyLine:
    """One line at the top of the page, updated while this run waits for its turn; an
    on_wait callback for RunQueue.slot. Until it is needed it is an empty placeholder."""

    def __init__(self) -> None:
        self._placeholder = st.empty()
        self._shown: str | None = None

    def __call__(self, place: int, wait: Span) -> None:
        text = (f"The server is busy with other people's runs. Yours is number {place} in line "
                f"and should start {when(wait)}.")
        if text != self._shown:
            self._shown = text
            self._placeholder.info(text, icon=":material/hourglass_top:")

    def clear(self) -> None:
        if self._shown is not None:
            self._placeholder.empty()
