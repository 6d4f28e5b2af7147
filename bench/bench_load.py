"""Load benchmark (issue 8): simultaneous Chromium sessions against one app server.

The server runs in hosted mode on 127.0.0.1, as the shared class demo would. One warm-up
session loads the model first (a teacher opens the app before the class does). Then the
sessions open the app; once every page has loaded (a barrier: booting a page costs a browser
~4 CPU-seconds, and here the browsers share the server's 2 cores), all start at once.

Every action is timed from the key press to the heatmap in the page showing its result (the
new text's tokens, or the new "layer L, head H" title), on the page's own clock: the key
event's timestamp to the animation frame that paints the change (load_tools.PAGE_CLOCK).
Opening the page is timed from navigation start to the first heatmap; the same actions also as
the Playwright driver sees them ("driver"). An action over --timeout seconds, or during which
the page shows a Streamlit exception or st.error box, is an error. The page counts each "busy"
message (an alert or toast matching --busy-pattern); the timing ends at the heatmap's paint.

Modes (and hostile: long mode, slider reruns, /effect, a lesson upload;
tests/harness/hostile_mix.py):

- rounds (the first bench): for each N in --sizes, N sessions type one text each (10 to ~200
  tokens) and move the head and layer sliders --moves times; the server's peak RSS per round.
- long: --sessions sessions each submit distinct texts of exactly --chars characters (5,000,
  the hosted limit; English-like words seeded by session and submission, so the run cache
  never serves one) one after another for --duration seconds.
- short: the same for --duration seconds with short texts (a quarter of --chars to all of it)
  and --moves slider moves after each text; p50/p95 for texts and for slider moves.

In long and short mode the server's RSS (VmRSS, with its children) is sampled every
--rss-every seconds, at close and after --quiet seconds with no sessions. Sessions get one
Chromium each unless --browsers is lower (then pages in their own contexts, spread over them).

    HF_HUB_OFFLINE=1 python bench/bench_load.py --sizes 1 4 8 --moves 4
    HF_HUB_OFFLINE=1 python bench/bench_load.py --mode long --sessions 10 --duration 180
    HF_HUB_OFFLINE=1 python bench/bench_load.py --mode short --sessions 30 --duration 180
    HF_HUB_OFFLINE=1 python bench/bench_load.py --mode hostile

Writes JSON to --out (default bench/out/load[_MODE].json); long and short mode also write
<out>_rss.csv (the RSS series), <out>_actions.csv (every action) and <out>_server.log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import time
from pathlib import Path

from repo_root import ROOT
from tests.harness import hostile_mix
from tests.harness.load_report import report_duration, report_rounds, summarize, write_csvs
from tests.harness.load_tools import (
    CHROME_ARGS, VIEWPORT, MemorySampler, RssRecorder, Tab, page_script, percentile, rss_mb,
    session_text, slider_move, slider_positions, text_for,
)
from tests.harness.serve import start_app, stop_app, wait_healthy

MODE_DEFAULTS = {  # flags left unset take these
    "rounds": {"moves": 4, "timeout": 30.0},
    "long": {"sessions": 10, "chars": 5000, "moves": 0, "duration": 180.0, "timeout": 60.0},
    "short": {"sessions": 30, "chars": 240, "moves": 4, "duration": 180.0, "timeout": 30.0},
    "hostile": {"sessions": 10, "chars": 5000, "moves": 0, "duration": 180.0, "timeout": 90.0,
                "quiet": 300.0},  # tests/harness/hostile_mix.py
}


async def _new_page(browser, busy_pattern: str):
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(page_script(busy_pattern))
    return context, await context.new_page()


async def session(browser, url: str, round_n: int, index: int, moves: int, timeout: float,
                  out: list[dict], all_open: asyncio.Barrier | None,
                  every_frame: bool = False, busy_pattern: str = "busy") -> None:
    """Rounds mode: open the page, type one text, move the sliders `moves` times."""
    context, page = await _new_page(browser, busy_pattern)
    tab = Tab(page, every_frame)
    try:
        out.append(await tab.timed("open", lambda: page.goto(url, wait_until="domcontentloaded",
                                                             timeout=timeout * 1000),
                                   [None, None], timeout))
        if all_open is not None:  # every browser has booted the page: now all act at once
            await all_open.wait()
        text, word = text_for(round_n, index)
        box = page.locator("[data-testid='stSidebar'] textarea")

        async def type_text():
            await box.fill(text)
            await box.press("Control+Enter")

        out.append(await tab.timed("type", type_text, [word, None], timeout))
        pos = {"head": 0, "layer": 0}
        for move in range(moves):
            act, title = slider_move(page, pos, "layer" if move % 3 == 2 else "head")
            out.append(await tab.timed("slider", act, [None, title], timeout))
    finally:
        await context.close()


async def run_round(url: str, n: int, round_n: int, moves: int, timeout: float,
                    together: bool = True, every_frame: bool = False,
                    busy_pattern: str = "busy") -> list[dict]:
    """One round of n sessions, each in its own Chromium (as each student has their own)."""
    from playwright.async_api import async_playwright

    results: list[dict] = []
    async with async_playwright() as p:
        browsers = [await p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROME_ARGS)
                    for _ in range(n)]
        try:
            barrier = asyncio.Barrier(n) if together else None
            await asyncio.gather(*(session(browsers[i], url, round_n, i, moves, timeout,
                                           results, barrier, every_frame, busy_pattern)
                                   for i in range(n)))
        finally:
            for browser in browsers:
                await browser.close()
    return results


def run_rounds(args, server, url: str, began: float) -> dict:
    rounds = []
    for round_n, n in enumerate(args.sizes, start=1):
        left = args.budget - (time.perf_counter() - began)
        if left <= 0:
            print(f"budget of {args.budget:.0f} s used up; N = {n} not run")
            break
        with MemorySampler(server.pid) as memory:
            start = time.perf_counter()
            try:
                results = asyncio.run(asyncio.wait_for(
                    run_round(url, n, round_n, args.moves, args.timeout, not args.no_barrier,
                              args.poll_every_frame, args.busy_pattern), timeout=left))
            except TimeoutError:
                results = [{"kind": "budget", "ms": 0, "ok": False, "error": "budget"}]
            wall = time.perf_counter() - start
        ok = [r["ms"] for r in results if r["ok"] and r["kind"] != "open"]
        driver = [r["driver_ms"] for r in results if r["ok"] and r["kind"] != "open"]
        typed = [r["ms"] for r in results if r["ok"] and r["kind"] == "type"]
        opened = [r["ms"] for r in results if r["ok"] and r["kind"] == "open"]
        rounds.append({
            "n": n, "actions": len([r for r in results if r["kind"] != "open"]),
            "errors": len([r for r in results if not r["ok"] or r.get("error_boxes")]),
            "busy_seen": sum(r.get("busy", 0) for r in results),
            "p50_ms": percentile(ok, 0.5) if ok else None,
            "p95_ms": percentile(ok, 0.95) if ok else None,
            "max_ms": max(ok) if ok else None,
            "driver_p95_ms": percentile(driver, 0.95) if driver else None,
            "type_p50_ms": statistics.median(typed or [0]),
            "open_p50_ms": statistics.median(opened or [0]),
            "peak_rss_mb": memory.peak, "wall_s": wall, "results": results,
        })
    return {"rounds": rounds}


async def endless_session(browser, url: str, index: int, args, out: list[dict],
                          all_open: asyncio.Barrier, clock: dict, rec: RssRecorder) -> None:
    """Long or short mode: open the page, then, once every page has, submit new texts (and
    move the sliders) until the run's deadline."""
    context, page = await _new_page(browser, args.busy_pattern)
    tab = Tab(page)
    where = {"session": index, "browser": index % clock["browsers"]}

    def keep(result: dict, cycle: int) -> dict:
        out.append({**where, "cycle": cycle, "t_s": round(time.perf_counter() - rec.t0, 2),
                    **result})
        return result

    try:
        keep(await tab.timed("open", lambda: page.goto(url, wait_until="domcontentloaded",
                                                       timeout=args.open_timeout * 1000),
                             [None, None], args.open_timeout), 0)
        await all_open.wait()
        if "deadline" not in clock:  # the first session through the barrier starts the clock
            clock["run_start_mb"] = rec.mark("run")
            clock["start"] = time.perf_counter()
            clock["deadline"] = clock["start"] + args.duration
        box = page.locator("[data-testid='stSidebar'] textarea")
        pos, cycle, fails = {"head": 0, "layer": 0}, 0, 0
        while time.perf_counter() < clock["deadline"] and fails < args.max_fails:
            cycle += 1
            text, marker = session_text(args.seed, index, cycle, args.chars, args.mode == "long")

            async def type_text(text=text):
                await box.fill(text)
                await box.press("Control+Enter")

            ok = keep(await tab.timed("type", type_text, [marker, None], args.timeout), cycle)["ok"]
            fails = 0 if ok else fails + 1
            for move in range(args.moves):
                if time.perf_counter() >= clock["deadline"] or fails >= args.max_fails:
                    break
                act, title = slider_move(page, pos, "layer" if move % 3 == 2 else "head")
                ok = keep(await tab.timed("slider", act, [None, title], args.timeout), cycle)["ok"]
                fails = 0 if ok else fails + 1
                if not ok:  # the key may not have arrived: read where the sliders are
                    with contextlib.suppress(Exception):
                        pos = await slider_positions(page)
            if args.think:
                await asyncio.sleep(args.think)
        if fails >= args.max_fails:
            clock.setdefault("stopped", []).append(index)
    finally:
        with contextlib.suppress(Exception):
            await context.close()


async def run_sessions(url: str, args, rec: RssRecorder, out: list[dict], clock: dict) -> None:
    from playwright.async_api import async_playwright

    n, b = args.sessions, clock["browsers"]
    async with async_playwright() as p:
        browsers = []
        try:
            for _ in range(b):
                browsers.append(await p.chromium.launch(executable_path="/usr/bin/chromium",
                                                        args=CHROME_ARGS))
            rec.mark("open")
            barrier = asyncio.Barrier(n)
            await asyncio.gather(*(endless_session(browsers[i % b], url, i, args, out, barrier,
                                                   clock, rec) for i in range(n)))
        finally:
            rec.mark("close")
            for browser in browsers:
                with contextlib.suppress(Exception):
                    await browser.close()


def _probe(args, name: str, command: str = "stats") -> dict | None:
    """With --probe: the server's memory breakdown now (bench/bench_memory_probe.py)."""
    if not args.probe:
        return None
    from bench_memory_probe import ask, brief

    return {"at": name, "command": command, **brief(ask(Path(args.probe), command, name))}


def run_duration(args, server, url: str, began: float, warm_up, runner=None) -> dict:
    """Long/short mode around `runner(url, args, rec, out, clock)` (default: the Chromium
    sessions; bench/bench_ws_load.py passes its mixed one)."""
    out: list[dict] = []
    clock = {"browsers": min(args.browsers or args.sessions, args.sessions)}
    probes = []
    with RssRecorder(server.pid, args.rss_every) as rec:  # phase "idle": no model yet
        rec.mark("warm-up")
        warm_up()
        start_mb = rec.mark("launch")  # model loaded, no session open
        probes.append(_probe(args, "launch"))
        left = args.budget - (time.perf_counter() - began)
        try:
            asyncio.run(asyncio.wait_for((runner or run_sessions)(url, args, rec, out, clock),
                                         timeout=max(left, 1)))
        except TimeoutError:
            out.append({"kind": "budget", "ms": 0, "ok": False, "error": "budget",
                        "busy": 0, "error_boxes": 0, "session": -1})
        ended = time.perf_counter()
        at_close = rec.mark("quiet")  # every context and browser is closed
        probes.append(_probe(args, "close"))
        time.sleep(args.quiet)
        after_quiet = rec.mark()
        probes += [_probe(args, "quiet"), _probe(args, "quiet-gc", "gc"),
                   _probe(args, "quiet-gc-trim", "gc+trim")]
    peak_mb, peak_t = rec.peak({"launch", "open", "run", "close"})
    quiet = [mb for _, mb, phase, _ in rec.samples if phase == "quiet"]
    return {
        "sessions": args.sessions, "browsers": clock["browsers"],
        "run_s": ended - clock.get("start", ended), "stopped_sessions": clock.get("stopped", []),
        "client_cpu_s": clock.get("client_cpu_s"),  # bench_ws_load.py: this process's CPU
        "rss": {"every_s": args.rss_every, "start_mb": start_mb,
                "run_start_mb": clock.get("run_start_mb"), "peak_mb": peak_mb,
                "peak_t_s": peak_t, "at_close_mb": at_close, "after_quiet_mb": after_quiet,
                "quiet_s": args.quiet, "quiet_min_mb": min(quiet),
                "min_available_mb": min(s[3] for s in rec.samples),
                "columns": ["t_s", "rss_mb", "phase", "available_mb"], "series": rec.samples},
        "summary": summarize(out), "probe": [p for p in probes if p], "actions": out,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--mode", choices=list(MODE_DEFAULTS), default="rounds")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8], help="rounds mode")
    parser.add_argument("--sessions", type=int, help="long/short/hostile (default 10 / 30 / 10)")
    parser.add_argument("--browsers", type=int, default=0,
                        help="long/short mode: Chromium processes the sessions are spread over, "
                        "each session in its own context (default: one per session)")
    parser.add_argument("--duration", type=float, help="long/short mode: seconds of submitting, "
                        "from when every page has loaded (default 180)")
    parser.add_argument("--quiet", type=float, help="seconds with no sessions after all are "
                        "closed (default 60; hostile mode 300)")
    parser.add_argument("--chars", type=int, help="long mode: characters per text (default "
                        "5000); short mode: the longest text (default 240)")
    parser.add_argument("--seed", type=int, default=0, help="of the generated texts")
    parser.add_argument("--think", type=float, default=0.0,
                        help="long/short mode: pause after each text and its moves, seconds")
    parser.add_argument("--rss-every", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--moves", type=int, help="slider moves after each text (default: "
                        "rounds 4, long 0, short 4)")
    parser.add_argument("--timeout", type=float,
                        help="per action, seconds (default: rounds 30, long 60, short 30)")
    parser.add_argument("--open-timeout", type=float, default=180.0,
                        help="long/short mode: for a page to load, seconds")
    parser.add_argument("--max-fails", type=int, default=3,
                        help="long/short mode: a session stops after this many errors in a row")
    parser.add_argument("--busy-pattern", default="busy",
                        help="JavaScript regular expression (case-insensitive) of a busy message")
    parser.add_argument("--budget", type=float, default=900.0, help="whole run, seconds")
    parser.add_argument("--local", action="store_true", help="not hosted mode")
    parser.add_argument("--page", default="attention", help="url path of the page opened")
    parser.add_argument("--port", type=int, help="of the server on 127.0.0.1 (default: free)")
    parser.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE",
                        help="extra environment of the server (MALLOC_ARENA_MAX= unsets the "
                        "hosted default, MALLOC_ARENA_MAX=1)")
    parser.add_argument("--probe", metavar="DIR", help="long/short mode: serve through "
                        "bench/bench_memory_probe.py and record the server's memory breakdown "
                        "after the warm-up, at close, after the quiet time, and then after "
                        "gc.collect() and malloc_trim(0)")
    parser.add_argument("--no-barrier", action="store_true", help="rounds mode: no waiting "
                        "for every page to load before the timed actions")
    parser.add_argument("--poll-every-frame", action="store_true",
                        help="rounds mode: the driver polls the heatmap on every animation frame "
                        "of every page (this bench's first harness; it costs the browsers CPU)")
    parser.add_argument("--out", help="JSON (default bench/out/load[_MODE].json)")
    hostile_mix.add_arguments(parser)
    return parser


def parse_args(parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    args = (parser or build_parser()).parse_args()
    for name, value in {"quiet": 60.0, **MODE_DEFAULTS[args.mode]}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(args: argparse.Namespace | None = None, runner=None, report=report_duration,
         stem: str = "load") -> None:
    """The bench; bench/bench_ws_load.py passes its own arguments, sessions and report."""
    args = args or parse_args()
    suffix = "" if args.mode == "rounds" else f"_{args.mode}"
    out = Path(args.out or ROOT / "bench" / "out" / f"{stem}{suffix}.json")
    log = out.with_name(out.stem + "_server.log")

    began = time.perf_counter()
    # hosted: started as README's "Deploying for a class" says (one malloc arena)
    env = {} if args.local else {"ATTENTION_LAB_HOSTED": "1", "MALLOC_ARENA_MAX": "1"}
    if args.mode == "hostile":  # tests/harness/hostile_mix.py
        runner, report, env["ATTENTION_LAB_IDLE_SECONDS"] = (
            hostile_mix.run_hostile, hostile_mix.report_hostile, str(round(args.idle)))
    env.update(item.split("=", 1) for item in args.env)
    env = {k: v for k, v in env.items() if v}  # NAME= unsets NAME
    server, url = start_app(log=log, port=args.port, probe=args.probe, **env)
    load_before = os.getloadavg()[0]
    try:
        wait_healthy(url, began, poll_s=0.2)
        url += args.page  # the page the sessions open
        idle_mb = rss_mb(server.pid)

        def warm_up() -> None:  # one session loads the model, as a teacher would
            warm = asyncio.run(run_round(url, 1, 0, 1, args.open_timeout,
                                         busy_pattern=args.busy_pattern))
            if not all(r["ok"] and not r["error_boxes"] for r in warm):
                raise RuntimeError(f"the warm-up session failed: {warm}")

        if args.mode == "rounds":
            warm_up()
            result = run_rounds(args, server, url, began)
        elif args.mode == "hostile":  # a guard kills the server if it blows up
            result = hostile_mix.guarded(run_duration, args, server, url, began, warm_up)
        else:
            result = run_duration(args, server, url, began, warm_up, runner)
    finally:
        stop_app(server)
    tracebacks = log.read_text(errors="replace").count("Traceback") if log.exists() else 0
    machine = {"processor": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "load_before": load_before, "load_after": os.getloadavg()[0],
               "took_s": time.perf_counter() - began}
    result.update(mode=args.mode, hosted=not args.local, idle_rss_mb=idle_mb,
                  server_tracebacks=tracebacks, machine=machine,
                  config={k: v for k, v in vars(args).items()})
    if args.mode == "rounds":
        report_rounds(result, args)
    else:
        report(result, args)
        write_csvs(result, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"\nwrote {out}" + ("" if args.mode == "rounds" else
                              f", {out.stem}_rss.csv, {out.stem}_actions.csv") + f"; server log {log}")


if __name__ == "__main__":
    main()
