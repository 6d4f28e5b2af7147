"""Helpers of the load bench (bench/bench_load.py): the script every page runs, one timed
action, the texts the sessions type, the server's memory, and percentiles."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from pathlib import Path

CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}
# Installed in every page before the app's own scripts. It records, on the page's clock (ms
# since the epoch), when the latest key was pressed and when the heatmap first showed what the
# driver asked for (window.__want = [marker or null, title or null]): a MutationObserver notices
# the change and one animation frame later, the frame that paints it, the time is taken. The
# driver then polls a flag every 100 ms. (Polling the heatmap itself on every animation frame,
# as this bench first did, costs each waiting browser ~0.08 CPU-s per second: the measurement
# slowed what it measured. --poll-every-frame brings that back for comparison.)
# The marker is matched against the heatmap's token labels with their "3·" positions dropped,
# squashed to lowercase letters and digits and joined (see `squash`), so a text is recognised
# however the tokenizer splits it ("session 3 round 12 begins" is "session3round12begins").
# The same observer counts Streamlit's error boxes (an exception, or st.error) and busy
# messages (an alert or toast whose text matches BUSY_PATTERN), each time one appears.
PAGE_CLOCK = r"""(() => {
    const now = () => performance.timeOrigin + performance.now();
    window.__keyAt = null; window.__shownAt = null; window.__want = [null, null];
    window.__busy = 0; window.__busyText = null; window.__errors = 0; window.__errorText = null;
    document.addEventListener('keydown', e => {
        window.__keyAt = performance.timeOrigin + e.timeStamp;
    }, true);
    const squash = s => String(s).toLowerCase().replace(/^\d+\u00b7/, '').replace(/[^a-z0-9]/g, '');
    let lastX = null, joined = '';
    window.__heatmapHas = ([marker, title]) => {
        const gd = document.querySelector('.js-plotly-plot');
        if (!gd || !gd.data || !gd.data[0] || !gd.data[0].x) return false;
        if (marker) {
            if (gd.data[0].x !== lastX) { lastX = gd.data[0].x; joined = Array.from(lastX, squash).join(''); }
            if (!joined.includes(marker)) return false;
        }
        const t = gd.querySelector('.gtitle');
        return !title || !!(t && t.textContent.toLowerCase().includes(title));
    };
    const BUSY = new RegExp(BUSY_PATTERN, 'i');
    let busyNow = false, errorNow = false;
    const scan = () => {
        let busy = null;
        for (const a of document.querySelectorAll(
                "[data-testid='stAlertContainer'], [data-testid='stToast']")) {
            if (BUSY.test(a.textContent)) { busy = a; break; }
        }
        if (busy && !busyNow) {
            window.__busy++;
            const words = busy.querySelector("[data-testid='stMarkdownContainer']") || busy;
            window.__busyText = words.textContent.slice(0, 200);
        }
        busyNow = !!busy;
        const err = document.querySelector(
            "[data-testid='stException'], [data-testid='stAlertContentError']");
        if (err && !errorNow) { window.__errors++; window.__errorText = err.textContent.slice(0, 300); }
        errorNow = !!err;
    };
    let framing = false;
    new MutationObserver(() => {
        scan();
        if (framing || window.__shownAt !== null || !window.__want) return;
        if (!window.__heatmapHas(window.__want)) return;
        framing = true;
        requestAnimationFrame(() => { window.__shownAt = now(); framing = false; });
    }).observe(document, {childList: true, subtree: true, characterData: true});
})();"""
ARM = "w => { window.__want = w; window.__shownAt = null; window.__keyAt = null; }"
SHOWN = ("() => window.__shownAt !== null"
         " && [window.__shownAt, window.__keyAt, performance.timeOrigin]")
# --poll-every-frame: the heatmap itself polled on every animation frame (the old harness).
SHOWN_EVERY_FRAME = """w => window.__heatmapHas(w)
    && [performance.timeOrigin + performance.now(), window.__keyAt, performance.timeOrigin]"""
COUNTS = "() => [window.__busy, window.__errors, window.__busyText, window.__errorText]"


def page_script(busy_pattern: str = "busy") -> str:
    """PAGE_CLOCK with the regular expression (JavaScript, case-insensitive) of a busy message."""
    return PAGE_CLOCK.replace("BUSY_PATTERN", json.dumps(busy_pattern))


def squash(text: str) -> str:
    """What PAGE_CLOCK matches a marker against: lowercase letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


class Tab:
    """One session's page: times actions and tallies the busy messages and error boxes it shows."""

    def __init__(self, page, every_frame: bool = False) -> None:
        self.page, self.every_frame = page, every_frame
        self.busy = self.errors = 0
        self.busy_text = self.error_text = None

    async def timed(self, kind: str, act, want: list, timeout_s: float) -> dict:
        """Run `act` (a coroutine function) and wait until the heatmap shows `want`
        ([marker, title]; for "open", any heatmap). ms: page clock, from the key press (or the
        navigation start) to the frame that paints it; driver_ms: as Playwright saw it."""
        page, start = self.page, time.perf_counter()
        try:
            if kind != "open":  # a new page starts armed for any heatmap
                await page.evaluate(ARM, want)
            await act()
            if self.every_frame:
                shown = await page.wait_for_function(SHOWN_EVERY_FRAME, arg=want,
                                                     timeout=timeout_s * 1000)
            else:
                shown = await page.wait_for_function(SHOWN, polling=100, timeout=timeout_s * 1000)
            driver_ms = (time.perf_counter() - start) * 1000
            seen_at, key_at, opened_at = await shown.json_value()
            began = opened_at if kind == "open" else key_at
            result = {"kind": kind, "ok": True, "driver_ms": driver_ms,
                      "ms": seen_at - began if began else driver_ms}
        except Exception as exc:  # noqa: BLE001 - a timeout or a page error is one error
            result = {"kind": kind, "ms": (time.perf_counter() - start) * 1000, "ok": False,
                      "error": type(exc).__name__}
        result["busy"], result["error_boxes"] = await self._counts()
        if result["busy"]:
            result["busy_text"] = self.busy_text
        if result["error_boxes"]:
            result["error_text"] = self.error_text
        return result

    async def _counts(self) -> tuple[int, int]:
        """Busy messages and error boxes that appeared since the last call."""
        try:
            busy, errors, self.busy_text, self.error_text = await self.page.evaluate(COUNTS)
        except Exception:  # noqa: BLE001 - a closed or crashed page: nothing more to count
            return 0, 0
        new = (busy - self.busy, errors - self.errors)
        self.busy, self.errors = busy, errors
        return new


WORDS = ("the a of and to in is was that for on with as by at from it this which or be are an "
         "have not they their one all were when there can more out into some time would about "
         "people other than then these two first water words sound number world could through "
         "after little only round years place great again because small large where help "
         "through much before line right three same called under along always house picture "
         "animal river mountain garden window pencil guitar rocket castle forest island button "
         "teacher student lesson morning evening country city letter answer question story "
         "paper music school family friend every during between light heavy quiet early late "
         "green yellow purple silver golden ancient modern simple careful sudden gentle bright "
         "walked carried opened closed followed noticed wondered listened remembered explained "
         "believed painted travelled discovered").split()


def session_text(seed: int, session: int, n: int, chars: int, exact: bool) -> tuple[str, str]:
    """The n-th text of a session and its marker: English-like words, pseudo-random but
    deterministic (seeded by seed, session and n), so no two submissions share a text and no
    run is served from the cache. It opens "Session 3 round 12 begins", which no other text
    contains as a prefix of its own heading: that is the marker. With exact, the text has
    `chars` characters; else between a quarter of that (at least 48) and all of it."""
    rng = random.Random(f"{seed}:{session}:{n}")
    heading = f"Session {session} round {n} begins"
    low = max(chars // 4, 48)
    size = chars if exact else rng.randint(low, max(chars, low))
    parts, length = [heading + "."], len(heading) + 1
    while length < size:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14)))
        sentence = " " + sentence[0].upper() + sentence[1:] + rng.choice(".....,;?!")
        parts.append(sentence)
        length += len(sentence)
    text = "".join(parts)[:size].rstrip()
    text = text + "." * (size - len(text))  # exactly `size` characters, no trailing space
    return text, squash(heading)


ROUND_WORDS = ["apple", "river", "mountain", "garden", "window", "pencil", "guitar", "rocket",
               "castle", "forest", "island", "button"]
FILLER = ("Students type their own sentences to see how each head of the model attends to the "
          "other tokens in the text. ")
SLIDERS = {"head": ("Head", 12), "layer": ("Layer", 6)}  # MiniLM: 12 heads, 6 layers


def text_for(round_n: int, session: int) -> tuple[str, str]:
    """Rounds mode: a text of 10 to ~200 tokens with a word that marks it, unique per round
    and session."""
    word = ROUND_WORDS[session % len(ROUND_WORDS)]
    repeats = [0, 1, 3, 6, 9][session % 5]
    return f"The {word} in round {round_n} session {session}. " + FILLER * repeats, word


def slider_move(page, pos: dict, key: str):
    """Move slider `key` one step (back to 0 from the end); returns the act and the title."""
    label, size = SLIDERS[key]
    pos[key] = (pos[key] + 1) % size
    slider = page.get_by_role("slider", name=label)

    async def act():
        await slider.focus()
        await slider.press("ArrowRight" if pos[key] else "Home")

    return act, f"layer {pos['layer']}, head {pos['head']}"


async def slider_positions(page) -> dict:
    pos = {}
    for key, (label, _) in SLIDERS.items():
        value = await page.get_by_role("slider", name=label).get_attribute("aria-valuenow",
                                                                             timeout=5000)
        pos[key] = int(float(value or 0))
    return pos


def _descendants(pid: int) -> list[int]:
    """pid and every process below it (children of any of its threads), from /proc."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return found


def rss_mb(pid: int) -> float:
    """Resident memory (VmRSS) of a process and all its descendants, in MB (from /proc)."""
    total = 0
    for p in _descendants(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def available_mb() -> float:
    """The machine's MemAvailable in MB: what the browsers and server leave."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class MemorySampler:
    """The server's peak RSS while in the `with` block, sampled every 0.2 s."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.2)

    def __enter__(self):
        self.peak = rss_mb(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


class RssRecorder:
    """The server's RSS every `every_s` seconds, as (seconds since start, MB, phase, machine's
    available MB); `phase` is whatever the caller set last. `mark()` takes a sample now."""

    def __init__(self, pid: int, every_s: float = 1.0) -> None:
        self.pid, self.every_s, self.phase = pid, every_s, "idle"
        self.samples: list[tuple[float, float, str, float]] = []
        self.t0, self._stop, self._lock = time.perf_counter(), threading.Event(), threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def mark(self, phase: str | None = None) -> float:
        with self._lock:
            if phase is not None:
                self.phase = phase
            mb = rss_mb(self.pid)
            self.samples.append((round(time.perf_counter() - self.t0, 2), mb, self.phase,
                                 available_mb()))
            return mb

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.mark()

    def peak(self, phases: set[str]) -> tuple[float, float]:
        """(MB, seconds) of the highest sample taken in one of `phases`."""
        picked = [(mb, t) for t, mb, phase, _ in self.samples if phase in phases]
        return max(picked) if picked else (float("nan"), float("nan"))

    def __enter__(self):
        self.mark()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def thread_count(pid: int) -> int:
    """Threads of one process now (0 once it is gone)."""
    try:
        return len(list(Path(f"/proc/{pid}/task").iterdir()))
    except OSError:
        return 0


class RssGuard:
    """Kills the server (a process this bench started) as soon as its RSS passes `limit_mb`,
    so a run that blows up fails the bench instead of the machine; samples every `every_s`
    seconds and keeps the peak RSS and thread count it saw."""

    def __init__(self, server, limit_mb: float, every_s: float = 0.1) -> None:
        self.server, self.limit_mb, self.every_s = server, limit_mb, every_s
        self.killed_at_mb: float | None = None
        self.peak_mb, self.peak_threads = 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s) and self.server.poll() is None:
            mb = rss_mb(self.server.pid)
            self.peak_mb = max(self.peak_mb, mb)
            self.peak_threads = max(self.peak_threads, thread_count(self.server.pid))
            if mb > self.limit_mb:
                self.killed_at_mb = mb
                self.server.kill()
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
