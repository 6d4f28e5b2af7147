"""How late the bench's own event loop runs: the bench's clients take their timestamps (and fire
their timers) in one asyncio loop, so a loop busy with other work (Chromium pages driven
through playwright, say) makes every measured delay longer than the server made it. A task
sleeps `every` seconds, over and over, and keeps how late each wake-up came."""

from __future__ import annotations

import asyncio
import time


class LoopLag:
    def __init__(self, every: float = 0.05) -> None:
        self.every, self.lags = every, []
        self._task: asyncio.Task | None = None
        self._cpu = 0.0

    async def _watch(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.every)
            self.lags.append(time.perf_counter() - start - self.every)

    async def __aenter__(self) -> LoopLag:
        self._cpu = time.process_time()
        self._task = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *exc) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._cpu = time.process_time() - self._cpu

    def report(self) -> dict:
        """The loop's lateness (p50, p95, max, seconds) and the bench process's CPU seconds."""
        ordered = sorted(self.lags) or [0.0]
        at = lambda q: round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))], 3)  # noqa: E731
        return {"bench_loop_late_s": [at(0.5), at(0.95), round(ordered[-1], 3)],
                "bench_cpu_s": round(self._cpu, 1)}
