"""Timers the benches share: `timed` (one untimed warm-up call, then `repeats` timed calls) and
`interleaved` (several calls taking turns, so drift on a shared machine hits them all)."""

from __future__ import annotations

import gc
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


def interleaved(calls: dict, repeats: int, warmup: int = 0) -> dict[str, list[float]]:
    """Seconds of each call per repeat, name -> [repeats]. Each repeat runs every call once, in
    an order rotated by one each time; `warmup` untimed rounds first. The garbage collector is
    off while timing and run after each call, outside the timed part."""
    for _ in range(warmup):
        for fn in calls.values():
            fn()
    names = list(calls)
    times = {name: [] for name in names}
    gc.disable()
    try:
        for r in range(repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                start = time.perf_counter()
                result = calls[name]()
                times[name].append(time.perf_counter() - start)
                del result
                gc.collect()
    finally:
        gc.enable()
    return times
