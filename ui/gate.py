"""Backpressure: at most a few page runs compute at once; the others wait their turn, in order,
and see their place in the queue instead of a page that hangs with no word.

A 2-core server gains nothing from ten forward passes at once: they share the cores, all
finish late, and each holds its trace in memory meanwhile. A queue keeps the cores busy with
a few runs, bounds the memory held by runs in flight, and tells everyone else how long.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator


class RunQueue:
    """First come, first served slots. `slot(on_wait)` blocks until this caller's turn and
    calls on_wait(place, seconds) about twice a second while it waits (place 1 = next)."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"a run queue needs at least one slot, got {slots}")
        self.slots = slots
        self._cond = threading.Condition()
        self._tickets = itertools.count()
        self._waiting: list[int] = []  # tickets in arrival order
        self._running = 0
        self._mean_seconds = 1.0  # a running mean of how long a slot is held

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def estimate(self, place: int) -> float:
        """Seconds until the caller at `place` starts, from how long recent runs took."""
        return self._mean_seconds * (place + self._running - 1) / self.slots

    @contextlib.contextmanager
    def slot(self, on_wait: Callable[[int, float], None] | None = None) -> Iterator[None]:
        ticket = next(self._tickets)
        with self._cond:
            self._waiting.append(ticket)
            try:
                while self._waiting[0] != ticket or self._running >= self.slots:
                    place = self._waiting.index(ticket) + 1
                    if on_wait is not None:
                        self._cond.release()
                        try:  # may raise (Streamlit stops a script that is being rerun)
                            on_wait(place, self.estimate(place))
                        finally:
                            self._cond.acquire()
                    self._cond.wait(timeout=0.5)
            except BaseException:
                self._waiting.remove(ticket)
                self._cond.notify_all()
                raise
            self._waiting.pop(0)
            self._running += 1
            self._cond.notify_all()  # the next in line may take a slot that is still free
        start = time.monotonic()
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                held = time.monotonic() - start
                self._mean_seconds = 0.8 * self._mean_seconds + 0.2 * held
                self._cond.notify_all()
