"""App benchmarks for the attention page (issue 3), each printed next to its goal or anchor.

1. Bytes sent for the all-heads overview of MiniLM (6 × 12 heads) at 512 tokens: the plotly
   spec of the overview element the page sends (read from AppTest), and in the same run
   bertviz's `model_view(..., html_action="return")` HTML for the same attentions and tokens.
   Goal: ≤ 2 MB; anchor: bertviz.
2. Warm slider rerun: the page already ran on this text; set the head slider to another head
   and rerun, on the server (AppTest runs the real script). Median over the repeats, at a
   short text and at 512 tokens. Goal: ≤ 50 ms median. AppTest reruns the whole script; in a
   real session the sliders sit in an `st.fragment`, so only that part reruns: the AppTest
   figure is an upper bound. In the same browser session as 3., the head slider is also moved
   with the keyboard and timed until the new heatmap is drawn (end to end).
3. Cold start to the first heatmap in a real browser (Debian chromium): from `streamlit run`
   to a drawn heatmap, and a second, warm page load in a new browser tab.

    HF_HUB_OFFLINE=1 python bench/bench_app.py [--repeats 30] [--out bench/out/app.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_forward import text_of_length  # noqa: E402
from tests.harness.serve import start_app, wait_healthy  # noqa: E402

SHORT = "The cat sat on the mat because it was warm."
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
MB = 1_000_000


def _app(text: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["sb_text"] = text
    return at.run()


def overview_bytes(text: str) -> dict:
    at = _app(text)
    if at.exception:
        raise RuntimeError(at.exception)
    specs = {el.key: len(el.proto.spec.encode()) for el in at.get("plotly_chart")}
    return {"overview_spec_bytes": specs["attn_overview"], "all_figure_spec_bytes": specs}


def bertviz_bytes(text: str) -> int:
    from bertviz import model_view

    from model import load_model

    trace = load_model("minilm").run(text)
    layers = tuple(trace.attentions[i][None] for i in range(trace.cfg.n_layers))
    html = model_view(layers, trace.tokens, html_action="return")
    return len(html.data.encode())


def warm_rerun(text: str, repeats: int) -> dict:
    at = _app(text)
    n_heads = 12
    times = []
    for i in range(repeats):
        at.slider(key="attn_head").set_value((i + 1) % n_heads)
        start = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - start) * 1000)
        if at.exception:
            raise RuntimeError(at.exception)
    return {"median_ms": statistics.median(times), "p90_ms": sorted(times)[int(0.9 * len(times))],
            "min_ms": min(times), "repeats": repeats}


def cold_start(repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    start = time.perf_counter()
    server, url = start_app()
    try:
        wait_healthy(url, start)
        healthy = time.perf_counter() - start
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROME_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url + "/attention", wait_until="domcontentloaded")
            page.wait_for_selector(".js-plotly-plot .heatmaplayer, .js-plotly-plot image",
                                   timeout=180_000)
            first = time.perf_counter() - start
            page2 = browser.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            page2.goto(url + "/attention", wait_until="domcontentloaded")
            page2.wait_for_selector(".js-plotly-plot .heatmaplayer, .js-plotly-plot image",
                                    timeout=180_000)
            warm = time.perf_counter() - t0
            slider_ms = browser_slider(page2, repeats)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    return {"server_healthy_s": healthy, "first_heatmap_s": first, "warm_page_load_s": warm,
            "browser_slider_ms": slider_ms}


def browser_slider(page, repeats: int) -> dict:
    """Head slider one step right with the keyboard, until the heatmap's title names the new
    head: the server's fragment rerun plus the websocket and the browser drawing it."""
    slider = page.get_by_role("slider", name="Head")
    slider.focus()
    times = []
    for i in range(repeats):
        head = (i + 1) % 12
        t0 = time.perf_counter()
        slider.press("ArrowRight" if head else "Home")
        page.wait_for_function(
            "h => [...document.querySelectorAll('.js-plotly-plot .gtitle')]"
            ".some(t => t.textContent.includes('head ' + h + ''))", arg=str(head),
            timeout=30_000)
        times.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": statistics.median(times), "p90_ms": sorted(times)[int(0.9 * len(times))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "app.json"))
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from model.registry import BUNDLED

    tok = AutoTokenizer.from_pretrained(str(BUNDLED["minilm"]()))
    long_text = text_of_length(tok, 512)
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    result = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "python": platform.python_version()}
    result["overview"] = overview_bytes(long_text)
    result["bertviz_model_view_html_bytes"] = bertviz_bytes(long_text)
    result["warm_rerun_short"] = warm_rerun(SHORT, args.repeats)
    result["warm_rerun_512"] = warm_rerun(long_text, args.repeats)
    result["cold_start"] = cold_start(args.repeats)
    result["load_average"] = [load_before, os.getloadavg()[0]]
    result["took_s"] = time.perf_counter() - began

    ov = result["overview"]["overview_spec_bytes"]
    bv = result["bertviz_model_view_html_bytes"]
    print("| measure | ours | goal / anchor |")
    print("| --- | ---: | ---: |")
    print(f"| overview spec at 512 tokens (bytes) | {ov:,} ({ov / MB:.2f} MB) | goal ≤ 2 MB; "
          f"bertviz model_view HTML {bv:,} ({bv / MB:.0f} MB), ratio {bv / ov:,.0f}× |")
    total = sum(result["overview"]["all_figure_spec_bytes"].values())
    print(f"| every figure on the page at 512 tokens (bytes) | {total:,} | — |")
    for name in ("short", "512"):
        w = result[f"warm_rerun_{name}"]
        print(f"| warm head-slider rerun, {name} text (median / p90 ms) | "
              f"{w['median_ms']:.1f} / {w['p90_ms']:.1f} | goal ≤ 50 ms median |")
    c = result["cold_start"]
    print(f"| cold start: `streamlit run` → first heatmap (s) | {c['first_heatmap_s']:.1f} "
          f"(server healthy at {c['server_healthy_s']:.1f}) | — |")
    print(f"| warm page load in a new tab → heatmap (s) | {c['warm_page_load_s']:.2f} | — |")
    b = c["browser_slider_ms"]
    print(f"| head slider in Chromium: key press → new heatmap drawn, short text (median / p90 ms)"
          f" | {b['median_ms']:.0f} / {b['p90_ms']:.0f} | — (end to end, for reference) |")
    print(f"\nload average before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f}; "
          f"took {result['took_s']:.0f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
