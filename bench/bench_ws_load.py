"""Load benchmark, a class without its browsers: protocol-level sessions, plus a few real ones.

bench/bench_load.py runs every session in headless Chromium on the server's machine. With 30
pages on 2 cores the browsers take the CPU (page open p50 131 s), so that run measures the
browsers, not the server; in a class each student's browser runs on the student's laptop. Here
--sessions minus --chromium sessions are tests/harness/ws_client.py sessions: they speak Streamlit's
websocket protocol as the frontend does (the same reruns, widget states, fragment reruns and
message cache) but draw nothing. The other --chromium sessions are real Chromium pages, as pages
in --browsers Chromium processes (bench_load's harness, unchanged), all at the same time. So
the report has the server's times for every session and a sample of real key-press-to-paint
times under the same load.

Everything else is bench_load.py's long/short mode: a warm-up session loads the model, every
session opens the page (--page, default attention?model=minilm), and once all have (a
barrier) each submits distinct texts (load_tools.session_text: the same texts as the Chromium
run) with --moves slider moves after each (layer on every third, else head), for --duration
seconds; server RSS every --rss-every seconds, then --quiet seconds with no sessions.

A ws session's action is timed from sending its rerun to the script_finished message of that
run; "heatmap" is when the heatmap's delta (the plotly_chart keyed --heatmap-key) arrived.
An action is an error when: over --timeout, an exception element or st.error box in the run,
the connection closed, no heatmap delta in the run, or a heatmap that does not show the new
text (its marker in the token labels) or the slider's "layer L, head H" in its title.

    HF_HUB_OFFLINE=1 python bench/bench_ws_load.py --sessions 30 --chromium 4 --duration 180

Writes bench/out/load_ws_short.json (--out), with _rss.csv, _actions.csv (a "client" column)
and _server.log, like bench_load.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import repo_root  # noqa: F401 - the repository root on sys.path, for tests.harness
from bench_load import build_parser, endless_session, main, parse_args
from tests.harness.load_report import _ms, summarize
from tests.harness.load_tools import CHROME_ARGS, RssRecorder, percentile
from tests.harness.ws_load import ws_session


async def run_mixed(url: str, args, rec: RssRecorder, out: list[dict], clock: dict) -> None:
    """Sessions 0..K-1 in Chromium (K = --chromium, as pages in --browsers processes), the
    rest as ws sessions; one barrier for all."""
    n, k = args.sessions, min(args.chromium, args.sessions)
    b = clock["browsers"] = min(args.browsers or k, k)
    barrier = asyncio.Barrier(n)
    browsers, p, cpu = [], None, time.process_time()
    try:
        if k:
            from playwright.async_api import async_playwright

            p = await async_playwright().start()
            for _ in range(b):
                browsers.append(await p.chromium.launch(executable_path="/usr/bin/chromium",
                                                        args=CHROME_ARGS))
        rec.mark("open")
        await asyncio.gather(
            *(endless_session(browsers[i % b], url, i, args, out, barrier, clock, rec)
              for i in range(k)),
            *(ws_session(url, i, args, out, barrier, clock, rec) for i in range(k, n)))
    finally:
        rec.mark("close")
        clock["client_cpu_s"] = time.process_time() - cpu
        for r in out:
            r.setdefault("client", "chromium")
        for browser in browsers:
            with contextlib.suppress(Exception):
                await browser.close()
        if p is not None:
            with contextlib.suppress(Exception):
                await p.stop()


def _row(label: str, sessions: int, s: dict, rss: str = "") -> str:
    slider = (f"{_ms(s['slider_p50_ms'])} / {_ms(s['slider_p95_ms'])} ms ({s['slider_moves']})"
              if s["slider_moves"] else "—")
    return (f"| {label} | {sessions} | {s['texts']} ({s['texts_ok']}) "
            f"| {_ms(s['text_p50_ms'])} / {_ms(s['text_p95_ms'])} ms | {slider} "
            f"| {_ms(s['open_p50_ms'])} / {_ms(s['open_max_ms'])} ms "
            f"| {s['errors']} ({s['sessions_with_errors']}) "
            f"| {s['busy_seen']} ({s['actions_with_busy']}) {rss}|")


def report_mixed(result: dict, args) -> None:
    """The Markdown table for BENCHMARKS.md: one row per kind of client, then all sessions."""
    rss, m, actions = result["rss"], result["machine"], result["actions"]
    k = min(args.chromium, args.sessions)
    ws = [r for r in actions if r.get("client") == "ws"]
    chrome = [r for r in actions if r.get("client") == "chromium"]
    texts = (f"distinct texts of {args.chars:,} characters" if args.mode == "long" else
             f"distinct short texts of {max(args.chars // 4, 48)}–{max(args.chars, 48)} "
             "characters")
    print(f"\nMachine: {m['processor']}, {m['cores']} cores; "
          f"{'hosted' if result['hosted'] else 'local'} mode; load average before/after "
          f"{m['load_before']:.2f} / {m['load_after']:.2f}; took {m['took_s']:.0f} s.")
    print(f"{args.mode} mode: {args.sessions} sessions, {args.sessions - k} protocol-level "
          f"(ws) and {k} Chromium pages in {result['browsers']} Chromium process(es). Each "
          f"submitted {texts}, each followed by {args.moves} slider moves, one after another "
          f"(pause {args.think:g} s), for {args.duration:g} s from when every session had "
          f"opened (the last action ended after {result['run_s']:.0f} s).")
    print(f"Times: ws, send → the run's script_finished message (no browser: nothing drawn); "
          f"chromium, key press → heatmap painted, on the page's clock; open: to the first "
          f"finished run (ws) / first heatmap (chromium). Errors: over {args.timeout:g} s, an "
          f"exception or st.error box, a dropped connection, a run without the new heatmap. "
          f"Busy: times a message matching /{args.busy_pattern}/i appeared.")
    print("\n| client | sessions | texts (ok) | text p50 / p95 | slider p50 / p95 (moves) "
          "| open p50 / max | errors (sessions) | busy seen (actions) "
          "| server RSS start → peak | RSS at close | RSS after quiet |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(_row("ws", args.sessions - k, summarize(ws), "| | | "))
    if k:
        print(_row("chromium", k, summarize(chrome), "| | | "))
    print(_row("all", args.sessions, result["summary"],
               f"| {rss['start_mb']:,.0f} → {rss['peak_mb']:,.0f} MB | "
               f"{rss['at_close_mb']:,.0f} MB | {rss['after_quiet_mb']:,.0f} MB "
               f"({rss['quiet_s']:g} s) "))
    beat = [r["heatmap_ms"] for r in ws if r["ok"] and r["kind"] != "open"]
    s = result["summary"]
    print(f"\nws: heatmap delta arrived p50 / p95 {_ms(percentile(beat, .5) if beat else None)} "
          f"/ {_ms(percentile(beat, .95) if beat else None)} ms after the send (texts and "
          f"moves); errors by kind (all): {s['errors_by_kind'] or 'none'}; sessions stopped: "
          f"{result['stopped_sessions'] or 'none'}; server tracebacks in its log: "
          f"{result['server_tracebacks']}; this process (ws clients + Playwright's side) used "
          f"{result.get('client_cpu_s') or 0:.0f} CPU-s from the first open to the last action.")
    for label, key in (("Busy message", "busy_texts"), ("Error", "error_texts")):
        if s[key]:
            print(f"{label}, e.g.: " + " | ".join(t.strip()[:160] for t in s[key]))
    print(f"Server RSS: {rss['start_mb']:,.0f} MB before the sessions, "
          f"{rss['run_start_mb'] or 0:,.0f} MB once every session had opened, peak "
          f"{rss['peak_mb']:,.0f} MB at {rss['peak_t_s']:.0f} s, {rss['at_close_mb']:,.0f} MB "
          f"with every session closed, lowest {rss['quiet_min_mb']:,.0f} and last "
          f"{rss['after_quiet_mb']:,.0f} MB over the {rss['quiet_s']:g} s after. Machine memory "
          f"available, lowest: {rss['min_available_mb']:,.0f} MB.")


def parse() -> object:
    parser = build_parser()
    parser.description = __doc__.splitlines()[0]
    parser.epilog = "\n".join(__doc__.splitlines()[1:])
    parser.add_argument("--chromium", type=int, default=4,
                        help="sessions that are real Chromium pages (the rest are ws sessions)")
    parser.add_argument("--heatmap-key", default="attn_heatmap",
                        help="key of the plotly chart a ws session waits for")
    parser.set_defaults(mode="short", browsers=1, page="attention?model=minilm")
    for action in parser._actions:  # noqa: SLF001 - bench_load's flag, another default here
        if action.dest == "browsers":
            action.help = "Chromium processes the --chromium pages are spread over (default 1)"
    args = parse_args(parser)
    if args.mode == "rounds":
        parser.error("--mode: long or short (rounds is bench_load.py's)")
    return args


if __name__ == "__main__":
    main(parse(), runner=run_mixed, report=report_mixed, stem="load_ws")
