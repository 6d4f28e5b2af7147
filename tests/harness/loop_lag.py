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
        self.cpu_s = 0.0  # the bench process's CPU seconds while it watched

    async def _watch(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.every)
            self.lags.append(time.perf_counter() - start - self.every)

    async def __aenter__(self) -> LoopLag:
        self.cpu_s = time.process_time()
        self._task = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *exc) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self.cpu_s = time.process_time() - self.cpu_s
