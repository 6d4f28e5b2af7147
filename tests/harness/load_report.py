"""What the load bench (bench/bench_load.py) prints and writes besides its JSON: Markdown tables
for BENCHMARKS.md, and CSV files of the server's memory and of every action."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from .load_tools import percentile

GOAL_N, GOAL_P95_MS = 8, 3000  # issue 8: at N = 8, no errors and p95 under 3 s
ACTION_COLUMNS = ["session", "browser", "cycle", "kind", "ok", "ms", "driver_ms", "busy",
                  "error_boxes", "error", "t_s", "busy_text", "error_text",
                  "client", "heatmap_ms", "status", "kb"]  # the last four: bench_ws_load.py


def _ms(value) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _stats(values: list[float], prefix: str) -> dict:
    if not values:
        return {f"{prefix}_p50_ms": None, f"{prefix}_p95_ms": None, f"{prefix}_max_ms": None}
    return {f"{prefix}_p50_ms": percentile(values, 0.5), f"{prefix}_p95_ms": percentile(values, 0.95),
            f"{prefix}_max_ms": max(values)}


def is_error(r: dict) -> bool:
    """A timeout or page failure, or an exception / st.error box shown during the action."""
    return not r["ok"] or bool(r.get("error_boxes"))


def summarize(actions: list[dict]) -> dict:
    def times(kind: str, field: str = "ms") -> list[float]:
        return [r[field] for r in actions if r["ok"] and r["kind"] == kind]

    bad = [r for r in actions if is_error(r)]
    kinds = Counter(r.get("error") or "error box" for r in bad)
    return {
        "texts": sum(r["kind"] == "type" for r in actions), "texts_ok": len(times("type")),
        "slider_moves": sum(r["kind"] == "slider" for r in actions),
        **_stats(times("type"), "text"), **_stats(times("type", "driver_ms"), "text_driver"),
        **_stats(times("slider"), "slider"), **_stats(times("slider", "driver_ms"), "slider_driver"),
        **_stats(times("open"), "open"),
        "errors": len(bad), "errors_by_kind": dict(kinds),
        "sessions_with_errors": len({r.get("session") for r in bad}),
        "timeouts": kinds.get("TimeoutError", 0),
        "error_boxes": sum(r.get("error_boxes", 0) for r in actions),
        "busy_seen": sum(r.get("busy", 0) for r in actions),
        "actions_with_busy": sum(r.get("busy", 0) > 0 for r in actions),
        "busy_texts": sorted({r["busy_text"] for r in actions if r.get("busy_text")})[:3],
        "error_texts": sorted({r["error_text"] for r in actions if r.get("error_text")})[:3],
    }


def write_csvs(result: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.stem + "_rss.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(result["rss"]["columns"])
        writer.writerows((t, f"{mb:.1f}", phase, f"{avail:.0f}")
                         for t, mb, phase, avail in result["rss"]["series"])
    with open(out.with_name(out.stem + "_actions.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, ACTION_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for r in result["actions"]:
            writer.writerow({k: (f"{v:.1f}" if isinstance(v, float) else v)
                             for k, v in r.items()})


def report_duration(result: dict, args) -> None:
    s, rss, m = result["summary"], result["rss"], result["machine"]
    n, b = result["sessions"], result["browsers"]
    where = (f"one Chromium per session ({b} browser processes)" if b == n else
             f"as pages (each in its own context) in {b} Chromium process{'es' if b > 1 else ''}")
    texts = (f"distinct texts of {args.chars:,} characters" if args.mode == "long" else
             f"distinct short texts of {max(args.chars // 4, 48)}–{max(args.chars, 48)} "
             "characters")
    moves = f", each followed by {args.moves} slider moves" if args.moves else ""
    print(f"\nMachine: {m['processor']}, {m['cores']} cores; "
          f"{'hosted' if result['hosted'] else 'local'} mode; load average before/after "
          f"{m['load_before']:.2f} / {m['load_after']:.2f}; took {m['took_s']:.0f} s.")
    print(f"{args.mode} mode: {n} sessions, {where}. Each submitted {texts}{moves}, one "
          f"after another "
          f"(pause {args.think:g} s), for {args.duration:g} s from when every page had loaded "
          f"(the last action ended after {result['run_s']:.0f} s).")
    print(f"Times: key press → heatmap painted, on the page's clock. Errors: an action over "
          f"{args.timeout:g} s, a page failure, or an exception / st.error box; busy: times a "
          f"message matching /{args.busy_pattern}/i appeared. Server RSS (VmRSS, with children) "
          f"every {rss['every_s']:g} s; idle {result['idle_rss_mb']:,.0f} MB before the model "
          f"was loaded.")
    print("\n| mode | sessions | browsers | duration | texts (ok) | text → heatmap p50 / p95 "
          "| slider → heatmap p50 / p95 | errors (sessions) | busy seen (actions) "
          "| server RSS start → peak | RSS at close | RSS after quiet |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    slider = (f"{_ms(s['slider_p50_ms'])} / {_ms(s['slider_p95_ms'])} ms ({s['slider_moves']})"
              if s["slider_moves"] else "—")
    print(f"| {args.mode} | {n} | {b} | {args.duration:g} s | {s['texts']} ({s['texts_ok']}) "
          f"| {_ms(s['text_p50_ms'])} / {_ms(s['text_p95_ms'])} ms | {slider} "
          f"| {s['errors']} ({s['sessions_with_errors']}) "
          f"| {s['busy_seen']} ({s['actions_with_busy']}) "
          f"| {rss['start_mb']:,.0f} → {rss['peak_mb']:,.0f} MB | {rss['at_close_mb']:,.0f} MB "
          f"| {rss['after_quiet_mb']:,.0f} MB ({rss['quiet_s']:g} s) |")
    print(f"\nText → heatmap max {_ms(s['text_max_ms'])} ms, driver p95 "
          f"{_ms(s['text_driver_p95_ms'])} ms; slider max {_ms(s['slider_max_ms'])} ms, driver "
          f"p95 {_ms(s['slider_driver_p95_ms'])} ms; page open p50 {_ms(s['open_p50_ms'])} ms, "
          f"max {_ms(s['open_max_ms'])} ms.")
    print(f"Errors by kind: {s['errors_by_kind'] or 'none'}; error boxes shown "
          f"{s['error_boxes']}; sessions stopped after {args.max_fails} errors in a row: "
          f"{result['stopped_sessions'] or 'none'}; server tracebacks in its log: "
          f"{result['server_tracebacks']}.")
    for label, texts in (("Busy message", s["busy_texts"]), ("Error box", s["error_texts"])):
        if texts:
            print(f"{label}, e.g.: " + " | ".join(t.strip()[:160] for t in texts))
    print(f"Server RSS: {rss['start_mb']:,.0f} MB before the sessions, "
          f"{rss['run_start_mb'] or 0:,.0f} MB once every page had loaded, peak "
          f"{rss['peak_mb']:,.0f} MB at {rss['peak_t_s']:.0f} s, {rss['at_close_mb']:,.0f} MB "
          f"with every browser closed, lowest {rss['quiet_min_mb']:,.0f} and last "
          f"{rss['after_quiet_mb']:,.0f} MB over the {rss['quiet_s']:g} s after. Machine memory "
          f"available, lowest: {rss['min_available_mb']:,.0f} MB.")
    if result.get("probe"):
        report_probe(result["probe"])


PROBE_COLUMNS = ["rss", "anon", "file", "heap", "thread_arenas", "other_anon", "arenas",
                 "malloc_in_use", "malloc_free", "mmapped", "tensors", "numpy", "traces",
                 "budget", "budget_now", "sessions"]


def report_probe(probes: list[dict]) -> None:
    """The server's memory from inside (bench/bench_memory_probe.py), MB unless a count."""
    print("\nInside the server (MB; arenas, traces and sessions are counts):\n")
    print("| at | " + " | ".join(PROBE_COLUMNS) + " |")
    print("| --- |" + " ---: |" * len(PROBE_COLUMNS))
    for row in probes:
        cells = ["—" if row.get(c) is None else f"{row[c]:,.0f}" for c in PROBE_COLUMNS]
        print(f"| {row['at']} | " + " | ".join(cells) + " |")


def report_rounds(result: dict, args) -> None:
    rounds, m = result["rounds"], result["machine"]
    print(f"Machine: {m['processor']}, {m['cores']} cores; "
          f"{'hosted' if result['hosted'] else 'local'} mode; server idle RSS "
          f"{result['idle_rss_mb']:.0f} MB; {args.moves} slider moves + 1 typed text per session")
    start_rule = "as soon as each page has loaded" if args.no_barrier else \
        "together, after every page has loaded"
    print(f"Timed actions start {start_rule}.")
    print("Times are from the key press to the heatmap showing the result, on the page's clock; "
          "'driver p95' is the same actions as the Playwright driver saw them.")
    print("\n| N | actions | p50 to heatmap (ms) | p95 (ms) | max (ms) | typed text p50 (ms) "
          "| errors | driver p95 (ms) | page open p50 (ms) | peak server RSS (MB) | busy seen "
          "| goal at N = 8 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rounds:
        goal = ""
        if r["n"] == GOAL_N:
            goal = "no errors, p95 < 3 s: " + _verdict(r["errors"], r["p95_ms"])
        print(f"| {r['n']} | {r['actions']} | {_ms(r['p50_ms'])} | {_ms(r['p95_ms'])} | "
              f"{_ms(r['max_ms'])} | {_ms(r['type_p50_ms'])} | {r['errors']} | "
              f"{_ms(r['driver_p95_ms'])} | {_ms(r['open_p50_ms'])} | "
              f"{r['peak_rss_mb']:,.0f} | {r['busy_seen']} | {goal} |")
    for n in sorted({r["n"] for r in rounds}):
        same = [r for r in rounds if r["n"] == n]
        if len(same) < 2:
            continue
        pooled = [x["ms"] for r in same for x in r["results"] if x["ok"] and x["kind"] != "open"]
        errors = sum(r["errors"] for r in same)
        if not pooled:
            print(f"\nN = {n}, {len(same)} rounds: no action succeeded; {errors} errors")
            continue
        line = (f"\nN = {n}, {len(same)} rounds pooled: {len(pooled)} actions, p50 "
                f"{percentile(pooled, 0.5):,.0f} ms, p95 {percentile(pooled, 0.95):,.0f} ms, "
                f"max {max(pooled):,.0f} ms, {errors} errors; p95 per round: "
                + ", ".join(f"{r['p95_ms']:,.0f}" for r in same if r["p95_ms"] is not None))
        if n == GOAL_N:
            line += "; goal (no errors, p95 < 3 s): " + _verdict(errors, percentile(pooled, 0.95))
        print(line)
    print(f"\nload average before/after: {m['load_before']:.2f} / {m['load_after']:.2f}; "
          f"took {m['took_s']:.0f} s; server tracebacks in its log: {result['server_tracebacks']}")


def _verdict(errors: int, p95_ms: float | None) -> str:
    met = errors == 0 and p95_ms is not None and p95_ms < GOAL_P95_MS
    return "met" if met else "NOT met"
