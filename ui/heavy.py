"""The pages' side of the working memory (ui/working_memory.py): what a heavy analysis will
cost, said before the click, and its reservation while it runs, with a plain word on the page
when it has to wait, runs in smaller pieces, or cannot run at all."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import streamlit as st

from analysis.cost import Plan

from .working_memory import NoRoom, megabytes, working_memory


def _seconds(s: float) -> str:
    if s < 1.5:
        return "about a second"
    if s < 90:
        return f"about {s:.0f} s"
    return f"about {s / 60:.0f} min"


def cost_words(plan: Plan) -> str:
    """ "about 240 MB of memory while it runs, about 20 s" """
    return f"about {megabytes(plan.most)} of memory while it runs, {_seconds(plan.seconds)}"


def allowance() -> int:
    """The server's working-memory allowance in bytes (what analyses fit their chunks to)."""
    return working_memory().allowance


def refusal(plan: Plan) -> str | None:
    """Why this analysis can never run on this server (even its smallest pieces do not fit),
    or None."""
    return working_memory().too_big(plan.least)


@contextlib.contextmanager
def room_for(plan: Plan) -> Iterator[int]:
    """Reserve the plan's working memory for the block and yield the bytes granted (the
    analysis fits its chunks to them). Waiting and smaller pieces are said on the page; when
    there is no room the page says why and stops."""
    note = st.empty()

    def waiting(seconds: float, ahead: int) -> None:
        others = "another analysis" if ahead <= 1 else f"{ahead} other analyses"
        note.info(f"Waiting for memory: the server is running other people's analyses "
                  f"(next after {others}); {seconds:.0f} s so far. Yours starts by itself.")

    try:
        grant = working_memory().reserve(plan.most, plan.least, on_wait=waiting)
        with grant as held:
            note.empty()
            if held.shrunk:
                note.caption(f"The server is busy, so this runs in smaller pieces "
                             f"({megabytes(held.bytes)} of memory instead of "
                             f"{megabytes(held.asked)}): the same numbers, a little slower.")
            yield held.bytes
    except NoRoom as exc:
        note.warning(str(exc))
        st.stop()
