"""How long a heavy analysis will take on this machine as it is now, said before it starts.

analysis/cost.py counts the work (`Plan.seconds`: seconds of one idle core of the benchmark
machine). Three things stand between that and the wall clock, and each is measured here:

1. The machine's load. A run's torch threads share the cores with every other runnable task
   (other users' runs, other programs): its fair share is `cores_for(...)` cores, the others
   counted as the scheduler weighs them (`others_beside`: scheduling groups first, nice levels
   within one). The load is read twice, as the 1-minute load average (it lags: two sessions
   that started computing five seconds ago are not in it yet) and as the tasks running now (it
   jumps): the estimate spans both.
2. Threads that wait for each other. A run with several threads on a machine with more
   runnable tasks than cores loses far more than its share: every operation waits for its
   slowest thread, and that one is often off its core, the more often the more tasks there
   are (measured: BENCHMARKS.md, "Time estimates that hold"): `thread_wait`.
3. Everything the count leaves out (this CPU's speed, the first run's warm-up, the allocator,
   Python's own time): `Pace` keeps, per kind of analysis, how long recent runs in this server
   really took against what was estimated at their start, and scales the next estimate by
   them. Before any run of a kind, `PRIOR` stands in, with a wider span.

The result is a `Span` (fewest and most seconds). Pages say "about N s" only when the span is
narrow enough for N to be within 2× of anything in it; otherwise they say the range.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from dataclasses import dataclass

# Real time over the estimate before two runs of a kind have been seen in this server: the
# middle and the span of what the benchmark measured (0.37-1.18 in first and second runs, idle
# and busy, on a machine shared by about eight people: BENCHMARKS.md)
PRIOR, PRIOR_LOW, PRIOR_HIGH = 1.0, 0.33, 2.5
# The first run of a kind in a process also warms torch up (its first backward pass, the
# allocator's first blocks): seconds of one idle core, and its share of the span
WARM_UP_SECONDS = 0.5
HISTORY = 16  # recent runs of each kind the pace learns from
LEARNED = 2  # runs of a kind before their own ratios replace the prior
LEAST_SPREAD = 1.3  # a span is never narrower than this factor each way around its middle
ABOUT = 3.0  # "about N s" only when the most is within this factor of the fewest


@dataclass(frozen=True)
class Machine:
    """The machine as a run would find it now."""

    cores: int
    threads: int  # torch threads one run uses
    load: float  # the 1-minute load average
    running: float  # tasks running now besides the one asking (sampled)

    def __post_init__(self) -> None:
        if self.cores < 1 or self.threads < 1:
            raise ValueError(f"a machine needs at least one core and one thread, got "
                             f"{self.cores} cores and {self.threads} threads")


def others_beside(threads: int, ours: float, groups: int) -> float:
    """Runnable tasks counted as tasks beside a run's `threads` that leave it the cores the
    scheduler gives it. Linux (with autogroups) shares the CPU equally among the scheduling
    groups that have work first, and by nice level within a group: `ours` is the others in the
    run's own group, weighed by nice, `groups` the number of other groups with work."""
    return (groups + 1) * (threads + max(0.0, ours)) - threads


def cores_for(cores: int, threads: int, others: float) -> float:
    """Cores a run with `threads` threads gets beside `others` runnable tasks: all it can use
    when they fit, else its threads' fair share of the cores."""
    others = max(0.0, others)
    return min(float(threads), cores * threads / (threads + others))


def thread_wait(cores: int, threads: int, others: float) -> float:
    """How much longer than its fair share a run with several threads takes when the runnable
    tasks outnumber the cores: 1 + (threads - 1) * sqrt(others per core). Fitted to MiniLM on 2
    cores with 2 threads beside two other runs (2.3-2.6x their fair share); beside a shared
    machine's 10-70 tasks per core it errs high, within the prior's span (BENCHMARKS.md, "Time
    estimates that hold")."""
    if threads == 1 or threads + others <= cores:
        return 1.0
    return 1.0 + (threads - 1) * math.sqrt(max(0.0, others) / cores)


def slowdown(machine: Machine, others: float) -> float:
    """How many times longer than on one idle core: the cores it gets, and the extra wait of
    threads that outnumber them."""
    wait = thread_wait(machine.cores, machine.threads, others)
    return wait / cores_for(machine.cores, machine.threads, others)


def slowdowns(machine: Machine) -> tuple[float, float]:
    """The least and the most slowdown the two readings of the load allow."""
    both = (slowdown(machine, machine.load), slowdown(machine, machine.running))
    return min(both), max(both)


@dataclass(frozen=True)
class Span:
    """Fewest and most seconds a run should take."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not 0 <= self.low <= self.high:
            raise ValueError(f"a span needs 0 <= low <= high, got {self.low}, {self.high}")

    @property
    def middle(self) -> float:
        """The geometric middle: within sqrt(high / low) of both ends."""
        return math.sqrt(self.low * self.high)

    @property
    def narrow(self) -> bool:
        """Narrow enough to say "about middle": within 2× of anything in the span."""
        return self.high <= ABOUT * self.low


class Pace:
    """How long recent runs took against their estimate, per kind: real seconds over the
    middle estimated at their start. One per server; safe across threads."""

    def __init__(self, history: int = HISTORY) -> None:
        self._ratios: dict[str, deque[float]] = {}
        self._history = history
        self._lock = threading.Lock()

    def record(self, kind: str, estimated: float, real: float) -> None:
        if estimated <= 0 or real < 0:
            return
        with self._lock:
            self._ratios.setdefault(kind, deque(maxlen=self._history)).append(real / estimated)

    def ratios(self, kind: str) -> list[float]:
        with self._lock:
            return list(self._ratios.get(kind, ()))

    def seen(self, kind: str) -> bool:
        return bool(self.ratios(kind))


def ratio_span(ratios: list[float]) -> tuple[float, float, float]:
    """The middle, fewest and most of real time over estimate: the prior until LEARNED runs,
    then the recent runs' median and range (never narrower than LEAST_SPREAD each way)."""
    if len(ratios) < LEARNED:
        return PRIOR, PRIOR_LOW, PRIOR_HIGH
    middle = statistics.median(ratios)
    return middle, min(min(ratios), middle / LEAST_SPREAD), max(max(ratios),
                                                                middle * LEAST_SPREAD)


def base_estimate(seconds: float, machine: Machine, first: bool) -> tuple[float, float]:
    """The work's seconds (one idle core, analysis/cost.py) on this machine now, before what
    recent runs taught: the least and the most the load allows, with the warm-up of a first
    run."""
    work = seconds + (WARM_UP_SECONDS if first else 0.0)
    least, most = slowdowns(machine)
    return work * least, work * most


def estimate(seconds: float, machine: Machine, ratios: list[float], first: bool) -> Span:
    """The span a run of `seconds` of work (one idle core) should take now, from the machine's
    load and recent runs' real time over their estimate (`ratios`, of this kind)."""
    low, high = base_estimate(seconds, machine, first)
    _, ratio_low, ratio_high = ratio_span(ratios)
    if first:  # the warm-up varies most of all under load
        ratio_high *= 1.5
    return Span(low * ratio_low, high * ratio_high)


def at_start(seconds: float, machine: Machine, first: bool) -> float:
    """What a run's real time is compared with when it ends (`Pace.record`): the middle of its
    load-only estimate at its start."""
    low, high = base_estimate(seconds, machine, first)
    return math.sqrt(low * high)
