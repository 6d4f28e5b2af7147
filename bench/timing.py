"""A timer the benches share: one untimed warm-up call, then `repeats` timed calls."""

from __future__ import annotations

import time


def timed(fn, repeats: int) -> tuple[list[float], object]:
    """Seconds of each of `repeats` calls of fn() after one warm-up call, and the last result."""
    out = fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out
