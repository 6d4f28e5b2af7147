"""Real Chromium pages among a live class's students, for bench/bench_class.py (--browsers N).

Each is a headless Chromium page of its own browser context (its own cookies, so nginx's
sticky cookie places it as any browser): it opens the join link, types its name, presses
"Join" and waits for "Following the teacher", as a student does. Its follow delay is measured
in the page itself: from the teacher's click being sent (the bench's clock) to the page showing
the step's "Step n of m" with the app idle (no run going, nothing stale on the page). On a
question step it picks an option and presses "Check my answer" through the page.

Chromium is Debian's (/usr/bin/chromium), through playwright; everything on 127.0.0.1.

In a classroom each page runs on its student's own device. Here the pages share the server's
2 cores, and drawing a step's figures in three Chromium pages takes about as much CPU as the
server's work for the whole class. Chromium run as root also raises its own threads' priority
(nice -8 seen), so `nice` cannot lower it. With `idle=True` Chromium runs under the kernel's
idle scheduling policy (a wrapper that execs `chrt --idle 0 chromium`; every thread it starts
keeps that policy), so the server is measured as with the pages on other machines, while each
page's own delay still counts its drawing.
"""

from __future__ import annotations

import os
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
MAIN = '[data-testid="stMain"]'
# the app is idle: no run going (the status widget's stop button) and nothing left stale
IDLE = ("!document.querySelector('[data-testid=\"stStatusWidget\"] button')"
        " && !document.querySelector('[data-stale=\"true\"]')")
SHOWS = (f"w => {{ const m = document.querySelector('{MAIN}');"
         f" return !!m && m.innerText.includes(w) && {IDLE}; }}")
# what a page that missed a step shows instead: the words? a run going? what is left stale?
STATE = (f"w => {{ const m = document.querySelector('{MAIN}'); const stale = [...document"
         f".querySelectorAll('[data-stale=\"true\"]')]; return {{words: !!m && m.innerText"
         f".includes(w), running: !!document.querySelector('[data-testid=\"stStatusWidget\"]"
         f" button'), stale: stale.length, staleText: stale.slice(0, 3).map(e => (e.innerText"
         f" || e.dataset.testid || '').slice(0, 60)), at: location.pathname + location.search,"
         f" shows: m ? m.innerText.slice(0, 160) : null}}; }}")


class Browsers:
    """One Chromium for the bench; `student()` opens a new page in a new context."""

    def __init__(self, idle: bool = False) -> None:
        self._playwright = self.browser = None
        self.idle, self._wrapper = idle, None

    def _executable(self) -> str:
        """Chromium, or a wrapper that starts it under the idle scheduling policy."""
        if not self.idle:
            return CHROMIUM
        fd, path = tempfile.mkstemp(prefix="chromium-idle-", suffix=".sh")
        with os.fdopen(fd, "w") as wrapper:
            wrapper.write(f'#!/bin/sh\nexec chrt --idle 0 {CHROMIUM} "$@"\n')
        os.chmod(path, 0o755)
        self._wrapper = path  # removed on the way out
        return path

    async def __aenter__(self) -> Browsers:
        try:
            from playwright.async_api import async_playwright
        except ImportError as exc:  # requirements-bench.txt: playwright
            raise SystemExit(f"--browsers needs playwright ({exc})") from None
        self._playwright = await async_playwright().start()
        self.browser = await self._playwright.chromium.launch(
            executable_path=self._executable(), args=CHROME_ARGS, headless=True)
        return self

    async def __aexit__(self, *exc) -> None:
        if self.browser is not None:
            await self.browser.close()
        if self._playwright is not None:
            await self._playwright.stop()
        if self._wrapper is not None:
            os.unlink(self._wrapper)

    async def student(self) -> BrowserStudent:
        context = await self.browser.new_context(viewport={"width": 1280, "height": 800})
        return BrowserStudent(await context.new_page())


class BrowserStudent:
    def __init__(self, page) -> None:
        self.page = page
        self.problem: str | None = None  # why it stopped following (a timeout, a crash)
        self.missed: list[dict] = []  # what the page showed instead, per missed step

    async def idle(self, timeout_s: float) -> None:
        await self.page.wait_for_timeout(300)
        await self.page.wait_for_function(f"() => {IDLE}", timeout=timeout_s * 1000)

    async def join(self, base: str, code: str, name: str, timeout_s: float) -> float | None:
        """Seconds from opening the join link to "Following the teacher"; None if it did not."""
        start, page = time.perf_counter(), self.page
        try:
            await page.goto(f"{base}/join?code={code}", wait_until="domcontentloaded")
            box = page.get_by_role("textbox", name="Your name (optional)")
            await box.wait_for(timeout=timeout_s * 1000)
            await box.fill(name)
            await box.press("Enter")
            await self.idle(timeout_s)
            await page.get_by_role("button", name="Join").click()
            await page.get_by_text("Following the teacher").first.wait_for(
                timeout=timeout_s * 1000)
        except Exception as exc:  # noqa: BLE001 - reported, the bench goes on
            self.problem = f"join: {type(exc).__name__}: {str(exc)[:200]}"
            return None
        return time.perf_counter() - start

    async def shows(self, words: str, since: float, within_s: float) -> float | None:
        """When (the bench's clock) the page showed `words` with the app idle; None if not
        within `within_s` of `since`."""
        left = max(0.1, within_s - (time.perf_counter() - since))
        try:
            await self.page.wait_for_function(SHOWS, arg=words, timeout=left * 1000,
                                              polling="raf")
        except Exception:  # noqa: BLE001 - a timeout: missed
            try:
                self.missed.append(await self.page.evaluate(STATE, words))
            except Exception as exc:  # noqa: BLE001 - the page is gone
                self.missed.append({"error": type(exc).__name__})
            return None
        return time.perf_counter()

    async def answer(self, pick: int, timeout_s: float) -> str | None:
        """Pick option `pick` (modulo their number) of the question on screen and press "Check
        my answer"; the option's words once the page says "Your answer is in"."""
        page = self.page
        options = page.locator(f'{MAIN} [data-testid="stRadio"] [role="radiogroup"] label')
        try:
            count = await options.count()
            if not count:
                return None
            option = options.nth(pick % count)
            words = (await option.inner_text()).strip()
            await option.click()
            await self.idle(timeout_s)
            await page.get_by_role("button", name="Check my answer").click()
            await page.get_by_text("Your answer is in").first.wait_for(timeout=timeout_s * 1000)
        except Exception as exc:  # noqa: BLE001 - reported, the bench goes on
            self.problem = f"answer: {type(exc).__name__}: {str(exc)[:200]}"
            return None
        return words


async def join_browsers(browsers: Browsers | None, base: str, code: str, n: int, first: int,
                        timeout_s: float) -> tuple[list[BrowserStudent], list[float]]:
    """n Chromium students join one after another, named "Student first+1"...; (the pages,
    seconds each took to follow)."""
    pages, took = [], []
    for i in range(n if browsers is not None else 0):
        student = await browsers.student()
        seconds = await student.join(base, code, f"Student {first + i + 1}", timeout_s)
        pages.append(student)
        if seconds is not None:
            took.append(seconds)
    return pages, took


async def step_shown(pages: list[BrowserStudent], number: int, sent: float,
                     wait_s: float) -> dict:
    """Each page's follow delay for step `number` (None: not drawn within wait_s)."""
    import asyncio

    words = f"Step {number} of "  # the lesson page's "Step 3 of 5"
    when = await asyncio.gather(*(p.shows(words, sent, wait_s) for p in pages))
    return {"browsers": len(pages), "browser_missed": sum(w is None for w in when),
            "browser_missed_state": [p.missed[-1] for p, w in zip(pages, when) if w is None],
            "browser_delays_s": [round(w - sent, 3) for w in when if w is not None]}


async def answer_through_pages(pages: list[BrowserStudent], first: int,
                               timeout_s: float) -> dict[int, str]:
    """Every page answers the question on screen (student index -> the option's words)."""
    import asyncio

    picks = await asyncio.gather(*(p.answer(first + i, timeout_s)
                                   for i, p in enumerate(pages)))
    return {first + i: pick for i, pick in enumerate(picks) if pick is not None}
