"""Timers the benches share: `timed` (one untimed warm-up call, then `repeats` timed calls) and
`interleaved` (several calls taking turns, so drift on a shared machine hits them all), and
`against`, one call's times set beside an anchor's, repeat by repeat."""

from __future__ import annotations

import gc
import statistics
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


def against(times: dict[str, list[float]], ours: str = "ours", anchor: str = "hf") -> dict:
    """One call's times against an anchor's, from the same repeats of `interleaved`: both
    medians in ms, the median of the per-repeat ratios ours/anchor and their quartiles."""
    ratios = [o / a for o, a in zip(times[ours], times[anchor])]
    q = statistics.quantiles(ratios, n=4)
    return {f"{anchor}_ms": 1000 * statistics.median(times[anchor]),
            f"{ours}_ms": 1000 * statistics.median(times[ours]),
            "ratio": statistics.median(ratios), "spread": (q[0], q[2])}
