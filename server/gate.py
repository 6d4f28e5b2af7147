"""Backpressure: at most a few page runs compute at once; the others wait their turn, in order,
and see their place in the queue instead of a page that hangs with no word.

A 2-core server gains nothing from ten forward passes at once: they share the cores, all
finish late, and each holds its trace in memory meanwhile. A queue keeps the cores busy with
a few runs, bounds the memory held by runs in flight, and tells everyone else how long.

How long: the runs that hold a slot are of two very different kinds, a new text (seconds)
and a rerun that finds its run in the cache (a fraction of a second). A mean of all of them
is pulled down by the cheap reruns, and a user at place 1 behind two long runs was told
"about 1 s" and waited 20. So the estimate schedules the line ahead of the caller. A run that
holds a slot and said it computes (`mark_computing`, called by ui/cache.py on a cache miss)
is expected to take what recent computing runs took; any run ends after what runs that lasted
at least as long as it has so far went on to take (from the last HISTORY runs of its kind).
Each run waiting ahead takes the mean of the recent runs of its kind.

A burst (a class submitting at once) starts with every slot held by runs that have not reached
their cache miss yet, so the kind is also told when a run joins the line: `slot(computes=True)`
for a rerun that brings a new text (app.py knows before the sidebar runs). Such a run counts as
long from its first second, and so does each one like it waiting ahead.

A fragment's rerun (a slider of the attention explorer) does not pass app.py's slot: when it
must compute, ui/cache.turn_to_compute takes a slot for it (`holds_slot` tells). The last line
of defence, `MemoryCeiling`, refuses new computations while the process's resident memory is
over model + budget + margin.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from analysis.pace import Span, ratio_span

HISTORY = 64  # recent slot holds the estimate learns from, of each kind
FIRST_GUESS_SECONDS = 2.0  # before any run has finished
# before any computing run has finished: a 5,000-character text on a busy 2-core server
# (BENCHMARKS.md, "Memory under a class's load")
FIRST_GUESS_COMPUTING_SECONDS = 8.0
PRIOR_RUNS = 3  # computing runs the estimate needs before it trusts their history alone
HONESTY_RUNS = 16  # recent waits whose real length against their first estimate sets the span
SHORTEST = 0.5  # seconds: a wait or an estimate shorter than this counts as this long


class RunQueue:
    """First come, first served slots. `slot(on_wait)` blocks until this caller's turn and
    calls on_wait(place, span) about twice a second while it waits (place 1 = next; span:
    the seconds to wait, fewest and most)."""

    def __init__(self, slots: int, clock: Callable[[], float] = time.monotonic) -> None:
        if slots < 1:
            raise ValueError(f"a run queue needs at least one slot, got {slots}")
        self.slots, self._clock = slots, clock
        self._cond = threading.Condition()
        self._tickets = itertools.count()
        self._waiting: list[int] = []  # tickets in arrival order
        self._started: dict[int, float] = {}  # ticket → when it took its slot
        self._computing: set[int] = set()  # tickets whose run said it computes
        self._expected: set[int] = set()  # waiting tickets that said they will compute
        self._local = threading.local()  # the ticket this thread holds a slot with
        self.holds: deque[float] = deque(maxlen=HISTORY)  # seconds each recent run held a slot
        self.computing_holds: deque[float] = deque(maxlen=HISTORY)  # those that computed
        # (first place, first estimate, seconds actually waited) of recent waiters: how honest
        # the estimate was (bench/bench_memory_probe.py reports it)
        self.waits: deque[tuple[int, float, float]] = deque(maxlen=256)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def _running(self) -> int:
        return len(self._started)

    def holds_slot(self) -> bool:
        """Whether this thread's run holds a slot now (a fragment's rerun does not: it never
        passes through app.py's queue)."""
        with self._cond:
            return getattr(self._local, "ticket", None) in self._started

    def mark_computing(self) -> None:
        """The run holding this thread's slot computes (a cache miss): it is a long one."""
        ticket = getattr(self._local, "ticket", None)
        with self._cond:
            if ticket in self._started:
                self._computing.add(ticket)

    def _remaining(self, elapsed: float, computing: bool) -> float:
        """Expected seconds left of a run that has held its slot for `elapsed` seconds: the mean
        excess of the recent runs of its kind that lasted longer; half its age again when none
        did."""
        holds = self._computing_history() if computing else self.holds
        guess = FIRST_GUESS_COMPUTING_SECONDS if computing else FIRST_GUESS_SECONDS
        if not holds:
            return max(guess - elapsed, elapsed / 2)
        longer = [h - elapsed for h in holds if h > elapsed]
        return sum(longer) / len(longer) if longer else max(elapsed, FIRST_GUESS_SECONDS) / 2

    def _computing_history(self) -> list[float]:
        """Recent computing runs, topped up with the first guess until there are
        PRIOR_RUNS: the first one is often the short default text a page opens with, and a
        class's first long texts must not be promised its fraction of a second."""
        holds = list(self.computing_holds)
        return holds + [FIRST_GUESS_COMPUTING_SECONDS] * max(0, PRIOR_RUNS - len(holds))

    def _per_run(self, computing: bool = False) -> float:
        if computing:
            holds = self._computing_history()
            return sum(holds) / len(holds)
        return sum(self.holds) / len(self.holds) if self.holds else FIRST_GUESS_SECONDS

    def estimate(self, place: int) -> float:
        """Seconds until the caller at `place` (1 = next) starts: the slots free up as the
        running runs end, and each of the place - 1 runs ahead takes the next free slot."""
        now = self._clock()
        free_at = [self._remaining(now - t, ticket in self._computing)
                   for ticket, t in self._started.items()]
        free_at += [0.0] * max(0, self.slots - len(free_at))
        heapq.heapify(free_at)
        ahead = self._waiting[: place - 1]
        ahead += [None] * (place - 1 - len(ahead))
        for ticket in ahead:
            per_run = self._per_run(ticket in self._expected)
            heapq.heappush(free_at, heapq.heappop(free_at) + per_run)
        return free_at[0]

    def span(self, seconds: float) -> Span:
        """The wait an estimate of `seconds` stands for, as a span: scaled by how the recent
        waits in this queue compared with their first estimate (analysis/pace.ratio_span:
        a wide prior until a few waits were seen), so the line says "about N s" only where
        this queue's estimates have held within 2x, and a range elsewhere."""
        with self._cond:
            recent = list(self.waits)[-HONESTY_RUNS:]
        # a half second stands for anything shorter: "about a second" told and 3 s waited is
        # an estimate 6 times too low, but 0.1 s told and 0.3 s waited held
        ratios = [max(real, SHORTEST) / max(guessed, SHORTEST) for _, guessed, real in recent]
        _, low, high = ratio_span(ratios)
        return Span(max(seconds, SHORTEST) * low, max(seconds, SHORTEST) * high)

    @contextlib.contextmanager
    def slot(self, on_wait: Callable[[int, Span], None] | None = None,
             computes: bool = False) -> Iterator[None]:
        """Hold one slot for the duration of the block. `computes`: the caller expects a cache
        miss (a new text), so its run counts as a long one from the start."""
        ticket, arrived, first = next(self._tickets), self._clock(), None
        with self._cond:
            self._waiting.append(ticket)
            if computes:
                self._expected.add(ticket)
            try:
                while self._waiting[0] != ticket or self._running >= self.slots:
                    place = self._waiting.index(ticket) + 1
                    seconds = self.estimate(place)
                    first = first or (place, seconds)
                    if on_wait is not None:
                        self._cond.release()
                        try:  # may raise (Streamlit stops a script that is being rerun)
                            on_wait(place, self.span(seconds))
                        finally:
                            self._cond.acquire()
                    self._cond.wait(timeout=0.5)
            except BaseException:
                self._waiting.remove(ticket)
                self._expected.discard(ticket)
                self._cond.notify_all()
                raise
            self._waiting.pop(0)
            if ticket in self._expected:
                self._expected.discard(ticket)
                self._computing.add(ticket)
            self._started[ticket] = start = self._clock()
            self._local.ticket = ticket
            if first is not None:
                self.waits.append((first[0], first[1], start - arrived))
            self._cond.notify_all()  # the next in line may take a slot that is still free
        try:
            yield
        finally:
            self._release(ticket, start)

    @contextlib.contextmanager
    def slot_if_free(self, computes: bool = False) -> Iterator[bool]:
        """A slot only if one is free now and nobody waits for one: yields True holding it,
        else False at once (for work that may be skipped, never queued: ui/class_warm.py)."""
        with self._cond:
            free = not self._waiting and self._running < self.slots
            if free:
                ticket = next(self._tickets)
                self._started[ticket] = start = self._clock()
                self._local.ticket = ticket
                if computes:
                    self._computing.add(ticket)
        if not free:
            yield False
            return
        try:
            yield True
        finally:
            self._release(ticket, start)

    def _release(self, ticket: int, start: float) -> None:
        with self._cond:
            del self._started[ticket]
            self._local.ticket = None
            self.holds.append(self._clock() - start)
            if ticket in self._computing:
                self._computing.discard(ticket)
                self.computing_holds.append(self.holds[-1])
            self._cond.notify_all()


class MemoryCeiling:
    """The last line of defence: while this process's resident memory is over a ceiling
    (model + budget + margin, server/settings.py), new work is refused with a message, instead of
    the server growing until the system kills it. `refusal()` first hands free memory back to
    the system (it may be only glibc's free pages) and looks again."""

    def __init__(self, ceiling: Callable[[], int | None], measure: Callable[[], int | None],
                 release: Callable[[], object] = lambda: None) -> None:
        self._ceiling, self._measure, self._release = ceiling, measure, release
        self.refused = 0  # how many times work was refused (the bench reports it)

    def over(self) -> bool:
        limit, rss = self._ceiling(), self._measure()
        return limit is not None and rss is not None and rss > limit

    def refusal(self) -> str | None:
        """None when new work may start; else the message to show."""
        if not self.over():
            return None
        self._release()
        if not self.over():
            return None
        self.refused += 1
        return ("The server is short of memory right now, so it cannot start this "
                "computation. Please try again in a minute: what others finish is freed.")
