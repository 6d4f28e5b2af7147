"""bench/bench_load.py --mode hostile: the everyday class load plus what a hostile (or unlucky)
user does to a shared server at the same time (issue 25).

All at once, from when every session has opened (a barrier):
- long: --sessions protocol-level sessions (tests/harness/ws_client.py) submit distinct texts of
  --chars characters (5,000: the hosted limit) one after another, as in long mode. They fill
  the memory budget and evict older runs.
- slider: --slider-sessions sessions each ran their own text of --slider-chars characters
  while opening; after --evict-wait seconds (their runs are evicted by then) they move the
  attention explorer's sliders, a fragment rerun each, every --slider-think seconds.
- effect: --effect-sessions sessions on /effect with a text of 512 tokens press "Measure every
  token" together, --effect-at seconds into the load.
- lesson: one Chromium page uploads a hostile lesson file on /teach (an `explain` with
  --lesson-placeholders `{prev.share:99999999}` facts, each a 100 MB string to a parser that
  does not bound format widths) at --lesson-at seconds and starts it.

A guard (load_tools.RssGuard) kills the server when its RSS passes --kill-above-mb, and the
report says so. Then every session closes and the server is left alone for --quiet seconds
(its idle time, ATTENTION_LAB_IDLE_SECONDS, is --idle).

Goals (issue 25): peak RSS <= model + budget + 1 GiB (model: the RSS after the warm-up), no
traceback in the server's log, every action answered by a result or a message (a busy line,
a warning or an info box), and RSS after the quiet time within model + 25% of the budget.

    HF_HUB_OFFLINE=1 python bench/bench_load.py --mode hostile            # ~11 minutes
    HF_HUB_OFFLINE=1 python bench/bench_load.py --mode hostile --duration 60 --idle 20 \\
        --quiet 40 --slider-sessions 6 --evict-wait 20                    # a short check
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path

from .load_report import _ms, summarize
from .load_tools import CHROME_ARGS, VIEWPORT, RssGuard, RssRecorder, session_text
from .ws_client import WsSession
from .ws_load import start_clock, ws_session

BUDGET_MB = 1024  # the hosted memory budget (server/settings.py)
MARGIN_MB = 1024  # the bound: model + budget + 1 GiB
EFFECT_CHARS = 3200  # English-like words: more than MiniLM's 512 tokens, cut to 512


def say(rec: RssRecorder, text: str) -> None:
    """Progress on stderr, with the seconds since the bench started."""
    print(f"[{time.perf_counter() - rec.t0:6.1f} s] {text}", file=sys.stderr, flush=True)


def hostile_lesson(placeholders: int) -> str:
    facts = " ".join("{prev.share:99999999}" for _ in range(placeholders))
    return ('title = "A hostile lesson"\nsummary = "Format widths."\nmodel = "minilm"\n'
            'text = "The cat sat on the mat because it was warm."\n\n[[steps]]\n'
            'title = "Hostile step"\npage = "attention"\nlayer = "{prev.layer}"\n'
            f'head = "{{prev.head}}"\nexplain = """\nShare: {facts}\n"""\n')


def _keeper(out: list[dict], group: str, index: int, rec: RssRecorder):
    def keep(result: dict, cycle: int) -> dict:
        out.append({"group": group, "session": index, "client": "ws", "cycle": cycle,
                    "t_s": round(time.perf_counter() - rec.t0, 2), **result})
        return result
    return keep


async def slider_session(url: str, index: int, args, out: list[dict], all_open, clock: dict,
                         rec: RssRecorder) -> None:
    """Its own text first (computed while opening), then slider moves once it is evicted."""
    session, keep = WsSession(url, busy_pattern=args.busy_pattern), _keeper(out, "slider",
                                                                         index, rec)
    try:
        keep(await session.open(args.open_timeout), 0)
        text, marker = session_text(args.seed + 1, index, 0, args.slider_chars, True)
        keep(await session.set_text(text, marker, args.timeout), 0)
        say(rec, f"slider session {index} opened")
        await all_open.wait()
        start_clock(clock, args, rec)
        await asyncio.sleep(args.evict_wait)
        pos, cycle = {"layer": 0, "head": 0}, 0
        while time.perf_counter() < clock["deadline"] and not session.ws_closed:
            cycle += 1
            which = "layer" if cycle % 3 == 0 else "head"
            keep(await session.move_slider(pos, which, args.timeout), cycle)
            await asyncio.sleep(args.slider_think)
    finally:
        with contextlib.suppress(Exception):
            await session.close()


async def effect_session(url: str, index: int, args, out: list[dict], all_open, clock: dict,
                         rec: RssRecorder) -> None:
    """A 512-token text on /effect, then "Measure every token" at --effect-at."""
    session = WsSession(url, heatmap_key="eff_strip", busy_pattern=args.busy_pattern,
                        keys=("sb_text", "eff_layer", "eff_head", "eff_run"))
    keep = _keeper(out, "effect", index, rec)
    try:
        keep(await session.open(args.open_timeout), 0)
        text, marker = session_text(args.seed + 2, index, 0, EFFECT_CHARS, True)
        typed = await session.set_text(text, None, args.timeout)
        if typed.get("error") == "NoHeatmap":  # the button, not yet the strip: as expected
            typed.update(ok=True, error=None)
        keep(typed, 0)
        say(rec, f"effect session {index} opened: {typed.get('error') or 'ok'}")
        await all_open.wait()
        start_clock(clock, args, rec)
        await asyncio.sleep(args.effect_at)
        say(rec, f"effect session {index} presses the button")
        clicked = keep(await session.click("eff_run", args.effect_timeout), 1)
        say(rec, f"effect session {index}: {clicked.get('error') or 'ok'} "
            f"{clicked.get('note_text', '')[:80]}")
    finally:
        with contextlib.suppress(Exception):
            await session.close()


async def lesson_upload(base: str, args, out: list[dict], all_open, clock: dict,
                        rec: RssRecorder) -> None:
    """One Chromium page: upload the hostile lesson on /teach and start it."""
    from playwright.async_api import async_playwright

    path = Path(tempfile.mkdtemp(prefix="hostile-lesson-")) / "hostile.toml"
    path.write_text(hostile_lesson(args.lesson_placeholders))
    result = {"group": "lesson", "session": 0, "client": "chromium", "cycle": 1,
              "kind": "lesson", "ok": False, "busy": 0, "error_boxes": 0}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROME_ARGS)
        waited = False
        try:
            page = await (await browser.new_context(viewport=VIEWPORT)).new_page()
            await page.goto(base + "teach", timeout=args.open_timeout * 1000)
            upload = page.locator("input[type=file]")
            await upload.wait_for(state="attached", timeout=args.open_timeout * 1000)
            waited = True
            say(rec, "lesson page opened")
            await all_open.wait()
            start_clock(clock, args, rec)
            await asyncio.sleep(args.lesson_at)
            start = time.perf_counter()
            await upload.set_input_files(str(path))
            say(rec, "lesson uploaded")
            result.update(await _lesson_outcome(page, args.timeout))
            result["ms"] = (time.perf_counter() - start) * 1000
            say(rec, f"lesson: {result.get('error') or result.get('note_text')}")
        except Exception as exc:  # noqa: BLE001 - a dead server or a missing widget: reported
            result.update(error=f"{type(exc).__name__}: {str(exc)[:160]}", ms=0.0)
            if not waited:  # the others wait for every session at the barrier
                await all_open.wait()
        finally:
            result["t_s"] = round(time.perf_counter() - rec.t0, 2)
            out.append(result)
            with contextlib.suppress(Exception):
                await browser.close()


async def _lesson_outcome(page, timeout_s: float) -> dict:
    """After the upload: "Start it" (then the lesson's page), or a message about the file."""
    error = page.locator("[data-testid='stAlertContentError']")  # the message about the file
    start = page.get_by_role("button", name="Start it")
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if await start.count():
            await start.click()
            break
        if await error.count():
            return {"ok": True, "note_text": (await error.first.inner_text())[:300]}
        await asyncio.sleep(0.3)
    else:
        return {"error": "neither the lesson nor a message"}
    while time.perf_counter() < deadline:
        if await page.locator("[data-testid='stException']").count():
            return {"error": "exception", "error_boxes": 1}
        if await page.get_by_text("Share:").count():  # its explanation, facts filled in
            return {"ok": True, "note_text": "the lesson opened"}
        if await error.count():
            return {"ok": True, "note_text": (await error.first.inner_text())[:300]}
        await asyncio.sleep(0.3)
    return {"error": "the lesson did not open within the timeout"}


async def run_hostile(url: str, args, rec: RssRecorder, out: list[dict], clock: dict) -> None:
    """The runner bench_load.run_duration calls: every group at once behind one barrier."""
    base = url.split("attention")[0]
    long_args = argparse.Namespace(**{**vars(args), "mode": "long", "moves": 0,
                                      "heatmap_key": "attn_heatmap"})
    n_long, n_slider, n_effect = args.sessions, args.slider_sessions, args.effect_sessions
    barrier = asyncio.Barrier(n_long + n_slider + n_effect + (1 if args.lesson else 0))
    rec.mark("open")
    say(rec, "sessions opening")
    long_out: list[dict] = []
    try:  # a session that fails is reported; it must not leave the others pending
        failed = await asyncio.gather(
            *(ws_session(url, i, long_args, long_out, barrier, clock, rec)
              for i in range(n_long)),
            *(slider_session(url, i, args, out, barrier, clock, rec) for i in range(n_slider)),
            *(effect_session(base + "effect?model=minilm", i, args, out, barrier, clock, rec)
              for i in range(n_effect)),
            *([lesson_upload(base, args, out, barrier, clock, rec)] if args.lesson else []),
            return_exceptions=True)
        for exc in [f for f in failed if isinstance(f, BaseException)]:
            say(rec, f"a session failed: {type(exc).__name__}: {exc}")
            out.append({"group": "bench", "kind": "session", "ok": False, "ms": 0.0,
                        "error": f"{type(exc).__name__}: {str(exc)[:160]}", "busy": 0,
                        "error_boxes": 0, "session": -1})
    finally:
        rec.mark("close")
        say(rec, "sessions closed")
        out += [{**r, "group": "long"} for r in long_out]


def guarded(run_duration, args, server, url: str, began: float, warm_up) -> dict:
    """bench_load.run_duration with the hostile runner, under a guard that kills the server
    when its RSS passes --kill-above-mb."""
    with RssGuard(server, args.kill_above_mb) as guard:
        result = run_duration(args, server, url, began, warm_up, run_hostile)
    result["guard"] = {"killed_at_mb": guard.killed_at_mb, "peak_mb": guard.peak_mb,
                       "peak_threads": guard.peak_threads}
    return result


def answered(r: dict) -> bool:
    """The user got a result, or a message saying why not (a busy line, a warning); a
    dropped connection (a server that died) is neither."""
    if "Connection" in str(r.get("error") or ""):
        return False
    return bool(r.get("ok") or r.get("note_text") or r.get("busy_text"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("hostile mode (tests/harness/hostile_mix.py)")
    group.add_argument("--slider-sessions", type=int, default=16)
    group.add_argument("--slider-chars", type=int, default=2000,
                       help="characters of each slider session's own text")
    group.add_argument("--evict-wait", type=float, default=60.0,
                       help="seconds of load before the slider sessions start moving")
    group.add_argument("--slider-think", type=float, default=2.0,
                       help="seconds between one slider session's moves")
    group.add_argument("--effect-sessions", type=int, default=2)
    group.add_argument("--effect-at", type=float, default=20.0,
                       help="seconds into the load when the effect sessions press the button")
    group.add_argument("--effect-timeout", type=float, default=240.0)
    group.add_argument("--no-lesson", dest="lesson", action="store_false",
                       help="leave out the hostile lesson upload")
    group.add_argument("--lesson-at", type=float, default=40.0)
    group.add_argument("--lesson-placeholders", type=int, default=10)
    group.add_argument("--idle", type=float, default=180.0,
                       help="the server's idle time (ATTENTION_LAB_IDLE_SECONDS), seconds")
    group.add_argument("--kill-above-mb", type=float, default=4500.0,
                       help="the guard kills the server when its RSS passes this")


def _group_row(group: str, actions: list[dict]) -> str:
    rows = [r for r in actions if r.get("group") == group and r["kind"] != "open"]
    if not rows:
        return f"| {group} | 0 | | | | | |"
    s = summarize(rows)
    ok = sum(bool(r.get("ok")) and not r.get("error_boxes") for r in rows)
    told = sum(not r.get("ok") and answered(r) for r in rows)
    silent = [r for r in rows if not answered(r) or r.get("error_boxes")]
    times = sorted(r["ms"] for r in rows if r.get("ok"))
    p50 = _ms(times[len(times) // 2]) if times else "—"
    worst = _ms(times[-1]) if times else "—"
    kinds = {}
    for r in silent:
        kinds[r.get("error") or "error box"] = kinds.get(r.get("error") or "error box", 0) + 1
    return (f"| {group} | {len(rows)} | {ok} | {told} | {len(silent)} {kinds or ''} "
            f"| {p50} / {worst} ms | {s['busy_seen']} |")


def report_hostile(result: dict, args) -> None:
    """The Markdown for BENCHMARKS.md, and the goals met or not."""
    rss, m, actions = result["rss"], result["machine"], result["actions"]
    model = rss["start_mb"]
    bound, idle_goal = model + BUDGET_MB + MARGIN_MB, model + 0.25 * BUDGET_MB
    guard = result.get("guard", {})
    print(f"\nMachine: {m['processor']}, {m['cores']} cores; hosted mode; load average "
          f"before/after {m['load_before']:.2f} / {m['load_after']:.2f}; took "
          f"{m['took_s']:.0f} s. Load for {args.duration:g} s; idle time {args.idle:g} s; "
          f"quiet {args.quiet:g} s.")
    print("\n| group | actions | result | message instead | neither (errors) "
          "| result p50 / max | busy lines seen |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for group in ("long", "slider", "effect", "lesson"):
        print(_group_row(group, actions))
    killed = guard.get("killed_at_mb")
    print(f"\nServer RSS: {model:,.0f} MB after the warm-up (\"model\"); peak "
          f"{max(rss['peak_mb'], guard.get('peak_mb', 0)):,.0f} MB (bound model + budget + "
          f"1 GiB = {bound:,.0f} MB); peak threads {guard.get('peak_threads')}; "
          + (f"KILLED by the guard at {killed:,.0f} MB (limit {args.kill_above_mb:,.0f} MB); "
             if killed else "")
          + f"{rss['at_close_mb']:,.0f} MB when every session had closed; "
          f"{rss['after_quiet_mb']:,.0f} MB after {rss['quiet_s']:g} s quiet (goal <= model + "
          f"25% of the budget = {idle_goal:,.0f} MB). Tracebacks in the server log: "
          f"{result['server_tracebacks']}.")
    notes = sorted({r.get("note_text", "")[:140] for r in actions
                    if r.get("note_text") and not r.get("ok")})
    if notes:
        print("Messages seen: " + " | ".join(notes[:5]))
    peak = max(rss["peak_mb"], guard.get("peak_mb", 0))
    verdicts = {"peak within bound": peak <= bound and not killed,
                "no tracebacks": result["server_tracebacks"] == 0,
                "every action answered": all(answered(r) and not r.get("error_boxes")
                                             for r in actions if r["kind"] != "open"),
                "idle RSS within goal": bool(rss["after_quiet_mb"] <= idle_goal and not killed)}
    print("Goals: " + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in verdicts.items()))
