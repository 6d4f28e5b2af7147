"""Cold start (issue 15): from `streamlit run` to the first heatmap drawn in Chromium, next to
the floor, a one-line Streamlit page started the same way, in one run.

Every timed start is a fresh server process (`python -m streamlit run <script>` on 127.0.0.1,
headless, offline) and a fresh Chromium context (no HTTP cache, no cookies), in one Chromium
launched beforehand (a user's browser is already open). The clock starts just before the
server process is started and stops when the page shows what it is waited for:

  floor          a one-line page (`st.write(...)`): its text is on screen
  app:<path>     the app at /<path>: a heatmap is drawn (plotly's ".heatmaplayer" image, or
                 the start page's Vega-Lite cells)
  base:<path>    the same for another checkout (--base-dir, e.g. the code before a change)

Variants rotate every repeat so load from other jobs falls on all of them; medians reported,
with the machine's load average before and after. Ports 8650-8659 (--port) by default.

    HF_HUB_OFFLINE=1 python bench/bench_coldstart.py [--repeats 5] [--paths attention ""]
        [--base-dir /tmp/base] [--out bench/out/coldstart.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
# A heatmap is drawn: plotly's heatmap image (the attention page), or the start page's
# Vega-Lite chart (viz/attention_spec.py, drawn as SVG) with its cells in place.
HEATMAP_JS = """() => !!document.querySelector(
  '.js-plotly-plot .heatmaplayer image, .js-plotly-plot .heatmaplayer path, '
  + '.vega-embed svg .mark-rect path')"""
FLOOR_TEXT = "Attention Lab floor page"


def port_in(low: int, high: int) -> int:
    """The first free port in [low, high]."""
    for port in range(low, high + 1):
        with socket.socket() as s:
            # as Tornado binds: a port whose last connection is in TIME_WAIT is free to it
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError(f"no free port in {low}-{high}")


def start(script: Path, cwd: Path, port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=cwd, env=dict(os.environ, HF_HUB_OFFLINE="1"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_healthy(url: str, since: float, limit_s: float = 120.0) -> float:
    while True:
        try:
            urllib.request.urlopen(url + "_stcore/health", timeout=2)
            return time.perf_counter() - since
        except OSError:
            if time.perf_counter() - since > limit_s:
                raise RuntimeError("the server did not start") from None
            time.sleep(0.02)


def one_start(browser, script: Path, cwd: Path, path: str, selector: str, port: int) -> dict:
    """Start the server, open /path in a fresh context, wait for `selector` (a CSS selector,
    or a JavaScript predicate "() => ..."); seconds."""
    t0 = time.perf_counter()
    server = start(script, cwd, port)
    url = f"http://127.0.0.1:{port}/"
    try:
        healthy = wait_healthy(url, t0)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto(url + path, wait_until="commit")
        if selector.startswith("() =>"):
            page.wait_for_function(selector, timeout=300_000, polling="raf")
        else:
            page.wait_for_selector(selector, state="attached", timeout=300_000)
        drawn = time.perf_counter() - t0
        context.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return {"healthy_s": healthy, "drawn_s": drawn}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--paths", nargs="*", default=["attention"],
                        help="app pages to open (\"\" is /)")
    parser.add_argument("--base-dir", type=Path, default=None,
                        help="another checkout to time the same way (e.g. before a change)")
    parser.add_argument("--port", type=int, default=8650)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "coldstart.json")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    floor_dir = Path(tempfile.mkdtemp(prefix="floor-"))
    floor = floor_dir / "floor.py"
    floor.write_text(f"import streamlit as st\nst.write({FLOOR_TEXT!r})\n")
    floor_sel = f"text={FLOOR_TEXT}"
    variants = {"floor": (floor, floor_dir, "", floor_sel)}
    for path in args.paths:
        variants[f"app:/{path}"] = (ROOT / "app.py", ROOT, path, HEATMAP_JS)
        if args.base_dir is not None:
            base = args.base_dir.resolve()
            variants[f"base:/{path}"] = (base / "app.py", base, path, HEATMAP_JS)
    names = list(variants)
    times: dict[str, list[dict]] = {n: [] for n in names}
    load = [os.getloadavg()]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROME_ARGS)
        for repeat in range(args.repeats):
            for name in names[repeat % len(names):] + names[:repeat % len(names)]:
                port = port_in(args.port, args.port + 9)
                times[name].append(one_start(browser, *variants[name], port=port))
                print(f"repeat {repeat + 1} {name}: {times[name][-1]['drawn_s']:.2f} s",
                      file=sys.stderr, flush=True)
        browser.close()
    load.append(os.getloadavg())

    print(f"{platform.machine()}, {os.cpu_count()} cores; {args.repeats} repeats; load average "
          f"(1/5/15 min) before {load[0][0]:.2f}/{load[0][1]:.2f}/{load[0][2]:.2f}, after "
          f"{load[1][0]:.2f}/{load[1][1]:.2f}/{load[1][2]:.2f}\n")
    print("| start | drawn, median (s) | min | max | server healthy, median (s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in names:
        drawn = [t["drawn_s"] for t in times[name]]
        healthy = [t["healthy_s"] for t in times[name]]
        print(f"| {name} | {statistics.median(drawn):.2f} | {min(drawn):.2f} | "
              f"{max(drawn):.2f} | {statistics.median(healthy):.2f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} cores",
                                    "load_average": load, "times": times}, indent=2))


if __name__ == "__main__":
    main()
