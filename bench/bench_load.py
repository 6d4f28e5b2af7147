"""Load benchmark (issue 8): N simultaneous Chromium sessions against one app server.

The server runs in hosted mode on 127.0.0.1, as the shared class demo would. One warm-up
session loads the model first (a teacher opens the app before the class does). Then, for each
N, N Chromium browsers (one per session, as each student has their own) open the app; once
every page has loaded (a barrier: booting a page costs a browser ~4 CPU-seconds, and here the
browsers share the server's 2 cores; --no-barrier leaves that in), all start at once: each
types its own text (10 to ~200 tokens, different in every session and every round, so nothing is served
from another session's cache) and then moves the head and layer sliders.

Every action is timed from the key press to the heatmap in the page showing its result (the
new tokens, or the new "layer L, head H" title), on the page's own clock: the key event's
timestamp (when the browser received it) to the animation frame that paints the change (a
MutationObserver in the page notices it; see PAGE_CLOCK). That is what a student waits for.
Opening the page is timed from navigation start to the first heatmap. The same actions are
also timed as the driver sees them (from before Playwright fills the box or presses the key
until Playwright hears back, with its 100 ms polling): on this machine the driver and the
browsers share the 2 cores with everything else; both are reported. An action that takes
longer than --timeout seconds is an
error; the whole run stops by itself after --budget seconds. The server's resident memory
is sampled every 0.2 s; the peak per round is reported. The server is not restarted between
rounds. A size given more than once (--sizes 1 4 8 8 8 8 8) is run that many times, and its
actions are also pooled: one round's p95 over 40 actions is its 2nd or 3rd slowest, so noisy.

    HF_HUB_OFFLINE=1 python bench/bench_load.py [--sizes 1 4 8] [--moves 4] \
        [--poll-every-frame] [--out bench/out/load.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import threading
import time
from pathlib import Path

from serve import start_app, wait_healthy  # bench/serve.py: run as bench/bench_load.py

ROOT = Path(__file__).resolve().parent.parent
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
WORDS = ["apple", "river", "mountain", "garden", "window", "pencil", "guitar", "rocket",
         "castle", "forest", "island", "button"]
GOAL_N, GOAL_P95_MS = 8, 3000  # issue 8: at N = 8, no errors and p95 under 3 s
FILLER = ("Students type their own sentences to see how each head of the model attends to the "
          "other tokens in the text. ")
# Installed in every page before the app's own scripts. It records, on the page's clock (ms
# since the epoch), when the latest key was pressed and when the heatmap first showed what the
# driver asked for (window.__want = [word or null, title or null]): a MutationObserver notices
# the change and one animation frame later, the frame that paints it, the time is taken. The
# driver then polls a flag every 100 ms. (Polling the heatmap itself on every animation frame,
# as this bench first did, costs each waiting browser ~0.08 CPU-s per second: the measurement
# slowed what it measured. --poll-every-frame brings that back for comparison.)
PAGE_CLOCK = """(() => {
    const now = () => performance.timeOrigin + performance.now();
    window.__keyAt = null; window.__shownAt = null; window.__want = [null, null];
    document.addEventListener('keydown', e => {
        window.__keyAt = performance.timeOrigin + e.timeStamp;
    }, true);
    window.__heatmapHas = ([word, title]) => {
        const gd = document.querySelector('.js-plotly-plot');
        if (!gd || !gd.data || !gd.data[0] || !gd.data[0].x) return false;
        const t = gd.querySelector('.gtitle');
        return (!word || Array.from(gd.data[0].x, String).some(l => l.toLowerCase().includes(word)))
            && (!title || !!(t && t.textContent.toLowerCase().includes(title)));
    };
    let framing = false;
    new MutationObserver(() => {
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


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB (from /proc)."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class MemorySampler:
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


def text_for(round_n: int, session: int) -> tuple[str, str]:
    """A text of 10 to ~200 tokens with a word that marks it, unique per round and session."""
    word = WORDS[session % len(WORDS)]
    repeats = [0, 1, 3, 6, 9][session % 5]
    return f"The {word} in round {round_n} session {session}. " + FILLER * repeats, word


async def session(browser, url: str, round_n: int, index: int, moves: int, timeout: float,
                  out: list[dict], all_open: asyncio.Barrier | None,
                  every_frame: bool = False) -> None:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    await context.add_init_script(PAGE_CLOCK)
    page = await context.new_page()

    async def timed(kind: str, act, word: str | None, title: str | None) -> None:
        start = time.perf_counter()
        try:
            if kind != "open":  # a new page starts armed for any heatmap
                await page.evaluate(ARM, [word, title])
            await act()
            if every_frame:
                shown = await page.wait_for_function(SHOWN_EVERY_FRAME, arg=[word, title],
                                                     timeout=timeout * 1000)
            else:
                shown = await page.wait_for_function(SHOWN, polling=100, timeout=timeout * 1000)
            driver_ms = (time.perf_counter() - start) * 1000
            seen_at, key_at, opened_at = await shown.json_value()
            began = opened_at if kind == "open" else key_at
            out.append({"kind": kind, "ok": True, "driver_ms": driver_ms,
                        "ms": seen_at - began if began else driver_ms})
        except Exception as exc:  # noqa: BLE001 - a timeout or a page error is one error
            out.append({"kind": kind, "ms": (time.perf_counter() - start) * 1000, "ok": False,
                        "error": type(exc).__name__})

    try:
        await timed("open", lambda: page.goto(url, wait_until="domcontentloaded"), None, None)
        if all_open is not None:  # every browser has booted the page: now all act at once
            await all_open.wait()
        text, word = text_for(round_n, index)
        box = page.locator("[data-testid='stSidebar'] textarea")

        async def type_text():
            await box.fill(text)
            await box.press("Control+Enter")

        await timed("type", type_text, word, None)
        head = page.get_by_role("slider", name="Head")
        layer = page.get_by_role("slider", name="Layer")
        h = lay = 0
        for move in range(moves):
            slider, key = (layer, "layer") if move % 3 == 2 else (head, "head")
            if key == "head":
                h = (h + 1) % 12
            else:
                lay = (lay + 1) % 6
            await slider.focus()
            await timed(key, lambda s=slider: s.press("ArrowRight" if (h if key == "head" else
                                                                       lay) else "Home"),
                        None, f"layer {lay}, head {h}")
        if await page.locator("[data-testid='stException']").count():
            out.append({"kind": "exception", "ms": 0, "ok": False, "error": "stException"})
    finally:
        await context.close()


async def run_round(url: str, n: int, round_n: int, moves: int, timeout: float,
                    together: bool = True, every_frame: bool = False) -> list[dict]:
    """One round of n sessions, each in its own Chromium (as each student has their own)."""
    from playwright.async_api import async_playwright

    results: list[dict] = []
    async with async_playwright() as p:
        browsers = [await p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROME_ARGS)
                    for _ in range(n)]
        try:
            barrier = asyncio.Barrier(n) if together else None
            await asyncio.gather(*(session(browsers[i], url, round_n, i, moves, timeout,
                                           results, barrier, every_frame)
                                   for i in range(n)))
        finally:
            for browser in browsers:
                await browser.close()
    return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _verdict(errors: int, p95_ms: float | None) -> str:
    met = errors == 0 and p95_ms is not None and p95_ms < GOAL_P95_MS
    return "met" if met else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--moves", type=int, default=4, help="slider moves per session")
    parser.add_argument("--timeout", type=float, default=30.0, help="per action, seconds")
    parser.add_argument("--budget", type=float, default=900.0, help="whole run, seconds")
    parser.add_argument("--local", action="store_true", help="not hosted mode")
    parser.add_argument("--no-barrier", action="store_true",
                        help="do not wait for every page to finish loading before the timed "
                        "actions (the browsers' page boot then competes with them for the CPU)")
    parser.add_argument("--poll-every-frame", action="store_true",
                        help="the driver polls the heatmap on every animation frame of every "
                        "page (this bench's first harness; it costs the browsers CPU)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "load.json"))
    args = parser.parse_args()

    began = time.perf_counter()
    server, url = start_app(**({} if args.local else {"ATTENTION_LAB_HOSTED": "1"}))
    load_before = os.getloadavg()[0]
    rounds = []
    try:
        wait_healthy(url, began, poll_s=0.2)
        idle_mb = rss_mb(server.pid)
        warm = asyncio.run(run_round(url, 1, 0, 1, 120.0))  # loads the model once
        if not all(r["ok"] for r in warm):
            raise RuntimeError(f"the warm-up session failed: {warm}")
        for round_n, n in enumerate(args.sizes, start=1):
            left = args.budget - (time.perf_counter() - began)
            if left <= 0:
                print(f"budget of {args.budget:.0f} s used up; N = {n} not run")
                break
            with MemorySampler(server.pid) as memory:
                start = time.perf_counter()
                try:
                    results = asyncio.run(asyncio.wait_for(
                        run_round(url, n, round_n, args.moves, args.timeout,
                                  not args.no_barrier, args.poll_every_frame),
                        timeout=left))
                except asyncio.TimeoutError:
                    results = [{"kind": "budget", "ms": 0, "ok": False, "error": "budget"}]
                wall = time.perf_counter() - start
            ok = [r["ms"] for r in results if r["ok"] and r["kind"] != "open"]
            driver = [r["driver_ms"] for r in results if r["ok"] and r["kind"] != "open"]
            rounds.append({
                "n": n, "actions": len([r for r in results if r["kind"] != "open"]),
                "errors": len([r for r in results if not r["ok"]]),
                "p50_ms": percentile(ok, 0.5) if ok else None,
                "p95_ms": percentile(ok, 0.95) if ok else None,
                "max_ms": max(ok) if ok else None,
                "driver_p95_ms": percentile(driver, 0.95) if driver else None,
                "type_p50_ms": statistics.median([r["ms"] for r in results
                                                  if r["ok"] and r["kind"] == "type"] or [0]),
                "open_p50_ms": statistics.median([r["ms"] for r in results
                                                  if r["ok"] and r["kind"] == "open"] or [0]),
                "peak_rss_mb": memory.peak, "wall_s": wall, "results": results,
            })
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()

    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"{'hosted' if not args.local else 'local'} mode; server idle RSS {idle_mb:.0f} MB; "
          f"{args.moves} slider moves + 1 typed text per session")
    start_rule = "as soon as each page has loaded" if args.no_barrier else \
        "together, after every page has loaded"
    print(f"Timed actions start {start_rule}.")
    print("Times are from the key press to the heatmap showing the result, on the page's clock; "
          "'driver p95' is the same actions as the Playwright driver saw them.")
    print("\n| N | actions | p50 to heatmap (ms) | p95 (ms) | max (ms) | typed text p50 (ms) "
          "| errors | driver p95 (ms) | page open p50 (ms) | peak server RSS (MB) "
          "| goal at N = 8 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rounds:
        fmt = (lambda v: f"{v:,.0f}" if v is not None else "—")
        goal = ""
        if r["n"] == GOAL_N:
            goal = "no errors, p95 < 3 s: " + _verdict(r["errors"], r["p95_ms"])
        print(f"| {r['n']} | {r['actions']} | {fmt(r['p50_ms'])} | {fmt(r['p95_ms'])} | "
              f"{fmt(r['max_ms'])} | {fmt(r['type_p50_ms'])} | {r['errors']} | "
              f"{fmt(r['driver_p95_ms'])} | {fmt(r['open_p50_ms'])} | "
              f"{r['peak_rss_mb']:,.0f} | {goal} |")
    for n in sorted({r["n"] for r in rounds}):
        same = [r for r in rounds if r["n"] == n]
        if len(same) < 2:
            continue
        pooled = [x["ms"] for r in same for x in r["results"] if x["ok"] and x["kind"] != "open"]
        errors = sum(r["errors"] for r in same)
        line = (f"\nN = {n}, {len(same)} rounds pooled: {len(pooled)} actions, p50 "
                f"{percentile(pooled, 0.5):,.0f} ms, p95 {percentile(pooled, 0.95):,.0f} ms, "
                f"max {max(pooled):,.0f} ms, {errors} errors; p95 per round: "
                + ", ".join(f"{r['p95_ms']:,.0f}" for r in same if r["p95_ms"] is not None))
        if n == GOAL_N:
            line += "; goal (no errors, p95 < 3 s): " + _verdict(errors, percentile(pooled, 0.95))
        print(line)
    print(f"\nload average before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f}; "
          f"took {time.perf_counter() - began:.0f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rounds": rounds, "idle_rss_mb": idle_mb,
                                          "hosted": not args.local}, indent=2))


if __name__ == "__main__":
    main()
