"""The server's working memory: what heavy analyses (integrated gradients, occlusion, the
ablation sweep, the patching grids, the walkthrough's full run) may allocate while they run, on
top of the model and the memory budget of kept runs (server/budget.py). No Streamlit here, so it
is testable alone.

One allowance per server process: ATTENTION_LAB_WORKING_MB (default 512 MB, inside the 1 GiB
margin that the process's memory ceiling leaves above the model and the budget). An analysis
reserves its estimated peak (analysis/cost.py) before it starts and gives it back when it
ends, so two users who click at once share the allowance instead of each taking gigabytes:

1. when `most` bytes (the analysis at its usual chunk sizes) are free, it gets them;
2. else, when at least `least` bytes (its smallest chunks) are free and nobody waits ahead of
   it, it gets what is free and runs in smaller chunks (`Grant.shrunk`);
3. else it waits its turn, first come first served, at most `wait_seconds`, and is told
   about it (`on_wait`) so the page can say so;
4. when even `least` is more than the whole allowance, or the wait runs out, `NoRoom` says
   why in plain words, and nothing runs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

ENV = "ATTENTION_LAB_WORKING_MB"
DEFAULT_MB = 512
WAIT_SECONDS = 60.0  # the longest an analysis waits for room before it gives up with a message
MB = 2**20


def megabytes(nbytes: int) -> str:
    """Bytes as the page says them: "about 240 MB", "1.3 GB"."""
    if nbytes >= 1024 * MB:
        return f"{nbytes / (1024 * MB):.1f} GB"
    return f"{max(1, round(nbytes / MB)):,} MB"


class NoRoom(Exception):
    """The analysis cannot run now: `str(exc)` says why, in words for the page."""


@dataclass(frozen=True)
class Grant:
    """What one reservation holds: `bytes` for the analysis to fit its chunks into."""

    bytes: int
    asked: int  # the `most` it asked for
    waited: float  # seconds it waited for room

    @property
    def shrunk(self) -> bool:
        """True when it got less than it asked for and runs in smaller chunks."""
        return self.bytes < self.asked


class WorkingMemory:
    """A pool of `allowance` bytes shared by every thread of the process. Thread-safe."""

    def __init__(self, allowance: int, clock: Callable[[], float] = time.monotonic) -> None:
        if allowance < 1:
            raise ValueError(f"the working-memory allowance must be positive, got {allowance}")
        self.allowance, self._clock = allowance, clock
        self._cond = threading.Condition()
        self._held: dict[int, int] = {}  # ticket -> bytes
        self._waiting: list[int] = []  # tickets in arrival order
        self._tickets = itertools.count()

    @property
    def used(self) -> int:
        with self._cond:
            return sum(self._held.values())

    @property
    def free(self) -> int:
        return self.allowance - self.used

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _grant_now(self, ticket: int, most: int, least: int) -> int | None:
        """Bytes this ticket can take now, or None (lock held)."""
        free = self.allowance - sum(self._held.values())
        first = not self._waiting or self._waiting[0] == ticket
        if free >= most and first:
            return most
        if free >= least and first:
            return free
        return None

    def too_big(self, least: int) -> str | None:
        """Why an analysis whose smallest chunks need `least` bytes can never run here."""
        if least <= self.allowance:
            return None
        return (f"This needs about {megabytes(least)} of working memory even in its smallest "
                f"pieces, more than the {megabytes(self.allowance)} this server allows for "
                "one analysis. Use a shorter text.")

    @contextlib.contextmanager
    def reserve(self, most: int, least: int | None = None, wait_seconds: float | None = None,
                on_wait: Callable[[float, int], None] | None = None) -> Iterator[Grant]:
        """Hold up to `most` bytes (at least `least`, default `most`) for the block.

        on_wait(seconds waited, analyses ahead) is called about twice a second while it
        waits, at most `wait_seconds` (default WAIT_SECONDS). Raises NoRoom when `least`
        exceeds the allowance or the wait runs out."""
        least = most if least is None else min(least, most)
        wait_seconds = WAIT_SECONDS if wait_seconds is None else wait_seconds
        most = min(most, self.allowance)
        reason = self.too_big(least)
        if reason:
            raise NoRoom(reason)
        ticket, start = next(self._tickets), self._clock()
        with self._cond:
            granted = self._grant_now(ticket, most, least)
            if granted is None:
                self._waiting.append(ticket)
                try:
                    granted = self._wait(ticket, most, least, start, wait_seconds, on_wait)
                finally:
                    self._waiting.remove(ticket)
                    self._cond.notify_all()
            self._held[ticket] = granted
        try:
            yield Grant(granted, most, self._clock() - start)
        finally:
            with self._cond:
                del self._held[ticket]
                self._cond.notify_all()

    def _wait(self, ticket: int, most: int, least: int, start: float, wait_seconds: float,
              on_wait) -> int:
        """Wait (lock held) until this ticket gets room; NoRoom when the time is up."""
        while True:
            waited = self._clock() - start
            if waited >= wait_seconds:
                raise NoRoom(
                    f"The server is busy with other analyses: their working memory is still "
                    f"in use after {waited:.0f} s of waiting. Try again in a minute.")
            if on_wait is not None:
                ahead = self._waiting.index(ticket)
                self._cond.release()
                try:  # may raise (Streamlit stops a script that is being rerun)
                    on_wait(waited, ahead)
                finally:
                    self._cond.acquire()
            self._cond.wait(timeout=min(0.5, max(0.01, wait_seconds - waited)))
            granted = self._grant_now(ticket, most, least)
            if granted is not None:
                return granted


def allowance_from_env() -> int:
    """ATTENTION_LAB_WORKING_MB in bytes (default DEFAULT_MB; a bad value means the default,
    at least 64 MB)."""
    value = os.environ.get(ENV, "").strip()
    try:
        mb = int(value) if value else DEFAULT_MB
    except ValueError:
        mb = DEFAULT_MB
    return max(64, mb) * MB


_POOL: dict[str, WorkingMemory] = {}
_POOL_LOCK = threading.Lock()


def working_memory() -> WorkingMemory:
    """The process's one pool, made on first use from the environment."""
    with _POOL_LOCK:
        if "pool" not in _POOL:
            _POOL["pool"] = WorkingMemory(allowance_from_env())
        return _POOL["pool"]
