"""Full-page screenshots of every page of an app directory at fixed inputs, and a pixel
comparison of two such sets (e.g. before and after a refactor).

Take: starts `streamlit run app.py` in APP (offline, 127.0.0.1:PORT), opens each page in a
fresh browser session with the inputs in the link (`?model=…&text=…`, read by ui/urlstate.py),
waits until the run is over (no running indicator, no stale element, no spinner, every plotly
figure drawn, the DOM quiet for --quiet-ms), and writes OUT/<page>_<width>_<input>.png.

    HF_HUB_OFFLINE=1 python tests/harness/screens.py take --app /work/wt-after --port 8621 \
        --out shots/after [--pages attention heads] [--widths 1400 800] [--inputs short long]

A page that waits for a click before its heavy part (the effect page's "Measure every token")
is shot after that click with --click TEXT: a button whose label starts with TEXT is clicked
once the page has settled, when there is one. --query k=v adds parameters to every link (a
second sentence: --query "pair=A dog chased the ball.").

    HF_HUB_OFFLINE=1 python tests/harness/screens.py take --app . --port 8700 --out shots/effect \
        --pages effect --inputs short long --click Measure

Compare: per file in both dirs, the share of pixels that differ, the largest channel
difference and the rows that differ, as a Markdown table; a red-on-grey diff image per pair.

    python tests/harness/screens.py compare shots/before shots/after --diffs shots/diff
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
DECODER_TEXT = "The cat sat on the mat."

# True once the page holds content and nothing is running, stale, spinning, still loading its
# code (a skeleton) or undrawn.
IDLE = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main || !main.querySelector('[data-testid="stElementContainer"]')) return false;
  if (document.querySelector('[data-testid="stStatusWidget"], .stale-element,'
      + ' [data-stale="true"], [data-testid="stSpinner"], [data-testid="stSkeleton"]'))
    return false;
  return [...document.querySelectorAll('.js-plotly-plot')].every(p => p.querySelector('.main-svg'));
}"""
WATCH = """(() => { window.__lastChange = performance.now();
  new MutationObserver(() => { window.__lastChange = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true,
                                        characterData: true}); })();"""
QUIET = "ms => (window.__lastChange !== undefined) && performance.now() - window.__lastChange > ms"
# Streamlit draws into a scrolling element, not the body: its height is the page's height.
HEIGHT = """() => { const m = document.querySelector('[data-testid="stMain"]');
  const s = document.querySelector('[data-testid="stSidebarContent"]');
  return Math.max(m ? m.scrollHeight : 0, s ? s.scrollHeight : 0,
                  document.documentElement.scrollHeight); }"""


def app_pages(app: Path) -> list[str]:
    """The url paths of the app's declared pages (teaching/pages.py in the app's folder)."""
    found = runpy.run_path(str(app / "teaching" / "pages.py"))
    return [spec.path for spec in found["PAGE_SPECS"]]


def default_inputs(app: Path) -> dict[str, tuple[str, str]]:
    """name -> (model, text): the app's own short and long examples on MiniLM, and a short
    text on the character-level decoder."""
    ex = runpy.run_path(str(app / "ui" / "examples.py"))
    return {"short": ("minilm", ex["SHORT"]), "long": ("minilm", ex["LONG"]),
            "decoder": ("tiny-chars", DECODER_TEXT)}


def start_app(app: Path, port: int, log: Path) -> subprocess.Popen:
    out = open(log, "wb")  # noqa: SIM115 - the child keeps its own copy
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--browser.gatherUsageStats", "false"],
            cwd=app, env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=out,
            stderr=subprocess.STDOUT)
    finally:
        out.close()


def wait_healthy(url: str, limit_s: float = 120.0) -> None:
    start = time.monotonic()
    while True:
        try:
            urllib.request.urlopen(url + "_stcore/health", timeout=2)
            return
        except OSError:
            if time.monotonic() - start > limit_s:
                raise RuntimeError(f"the app at {url} did not start") from None
            time.sleep(0.2)


def settle(page, quiet_ms: int, timeout_s: float) -> bool:
    """Wait until idle and quiet; False if it never got there within the time limit."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = max(1000, int((deadline - time.monotonic()) * 1000))
        try:
            page.wait_for_function(IDLE, timeout=left, polling=200)
            page.wait_for_function(QUIET, arg=quiet_ms, timeout=quiet_ms + 4000, polling=100)
            if page.evaluate(IDLE):  # still idle after the quiet spell: done
                return True
        except Exception:  # noqa: BLE001 - a timeout here means "not yet"; loop until deadline
            pass
    return False


def dismiss_not_found(page) -> None:
    """Streamlit's "Page not found" notice on a first visit (#9992) would cover the page."""
    notice = page.get_by_text("Page not found")
    if notice.count():
        page.keyboard.press("Escape")
        notice.first.wait_for(state="detached", timeout=10_000)


def click_button(page, label: str | None, quiet_ms: int, timeout_s: float) -> bool:
    """Click the first button whose label starts with `label`, if any, and settle again."""
    if not label:
        return True
    button = page.get_by_role("button", name=re.compile("^" + re.escape(label)))
    if not button.count():
        return True
    button.first.click()
    page.wait_for_timeout(500)
    return settle(page, quiet_ms, timeout_s)


def shoot(browser, url: str, width: int, height: int, path: Path, quiet_ms: int,
          timeout_s: float, click: str | None = None) -> str:
    """One fresh session (new context), one full-page PNG; returns a one-word status."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    try:
        page.add_init_script(WATCH)
        page.goto(url, wait_until="domcontentloaded")
        ok = settle(page, quiet_ms, timeout_s)
        dismiss_not_found(page)
        ok = click_button(page, click, quiet_ms, timeout_s) and ok
        full = max(height, int(page.evaluate(HEIGHT)))
        if full > height:  # grow the window to the whole page, let it re-lay out, then shoot
            page.set_viewport_size({"width": width, "height": full})
            ok = settle(page, quiet_ms, timeout_s) and ok
            full = max(full, int(page.evaluate(HEIGHT)))
            page.set_viewport_size({"width": width, "height": full})
            page.wait_for_timeout(quiet_ms)
        page.screenshot(path=str(path), full_page=True)
        errors = page.locator('[data-testid="stException"]').count()
        return ("ok" if ok else "unsettled") + (f" exceptions={errors}" if errors else "")
    finally:
        ctx.close()


def take(args) -> None:
    from playwright.sync_api import sync_playwright

    app = Path(args.app).resolve()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pages = args.pages or app_pages(app)
    inputs = default_inputs(app)
    for spec in args.input or []:  # name=model:text
        name, _, rest = spec.partition("=")
        model, _, text = rest.partition(":")
        inputs[name] = (model, text)
    chosen = args.inputs or list(inputs)
    base = args.url or f"http://127.0.0.1:{args.port}/"
    server = None if args.url else start_app(app, args.port, out / "server.log")
    try:
        wait_healthy(base)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS,
                                        headless=True)
            for name in chosen:
                model, text = inputs[name]
                extra = dict(q.split("=", 1) for q in args.query or [])
                query = urllib.parse.urlencode({"model": model, "text": text, **extra})
                for pg in pages:
                    for width in args.widths:
                        path = out / f"{pg or 'root'}_{width}_{name}.png"
                        t0 = time.monotonic()
                        status = shoot(browser, f"{base}{pg}?{query}", width, args.height,
                                       path, args.quiet_ms, args.timeout, args.click)
                        print(f"{path.name}\t{status}\t{time.monotonic() - t0:.1f}s",
                              flush=True)
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


def compare(args) -> None:
    import numpy as np
    from PIL import Image

    a_dir, b_dir = Path(args.a), Path(args.b)
    diffs = Path(args.diffs) if args.diffs else None
    if diffs:
        diffs.mkdir(parents=True, exist_ok=True)
    names = sorted({p.name for p in a_dir.glob("*.png")} | {p.name for p in b_dir.glob("*.png")})
    print("| file | size A | size B | pixels differing | max diff | rows differing |")
    print("|---|---|---|---|---|---|")
    for name in names:
        if not (a_dir / name).exists() or not (b_dir / name).exists():
            print(f"| {name} | {'missing' if not (a_dir / name).exists() else ''} "
                  f"| {'missing' if not (b_dir / name).exists() else ''} | | | |")
            continue
        a = np.asarray(Image.open(a_dir / name).convert("RGB"), dtype=np.int16)
        b = np.asarray(Image.open(b_dir / name).convert("RGB"), dtype=np.int16)
        size_a, size_b = f"{a.shape[1]}×{a.shape[0]}", f"{b.shape[1]}×{b.shape[0]}"
        h, w = max(a.shape[0], b.shape[0]), max(a.shape[1], b.shape[1])
        pa = np.full((h, w, 3), 255, np.int16)
        pb = pa.copy()
        pa[:a.shape[0], :a.shape[1]] = a
        pb[:b.shape[0], :b.shape[1]] = b
        delta = np.abs(pa - pb).max(axis=2)
        mask = delta > args.tolerance
        rows = np.flatnonzero(mask.any(axis=1))
        span = f"{rows[0]}–{rows[-1]}" if rows.size else "—"
        print(f"| {name} | {size_a} | {size_b} | {mask.mean():.4%} | {delta.max()} | {span} |")
        if diffs and mask.any():
            grey = (pb.mean(axis=2, keepdims=True) * 0.3 + 170).repeat(3, axis=2)
            grey[mask] = (230, 0, 0)
            Image.fromarray(grey.astype(np.uint8)).save(diffs / name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("take", help="screenshot every page of one app directory")
    t.add_argument("--app", required=True, help="directory holding app.py")
    t.add_argument("--port", type=int, default=8620)
    t.add_argument("--url", help="an app already running at this base URL (ending in /); "
                   "then --app is only read for its pages and examples")
    t.add_argument("--out", required=True)
    t.add_argument("--pages", nargs="*", help="url paths (default: app.py's PAGES); '' is /")
    t.add_argument("--widths", type=int, nargs="+", default=[1400, 800])
    t.add_argument("--height", type=int, default=900)
    t.add_argument("--inputs", nargs="*", help="names among short, long, decoder and --input")
    t.add_argument("--input", action="append", help="extra input NAME=MODEL:TEXT")
    t.add_argument("--click", help="click a button whose label starts with this, if any")
    t.add_argument("--query", action="append", help="extra link parameter k=v (repeatable)")
    t.add_argument("--quiet-ms", type=int, default=1000, help="DOM quiet this long = done")
    t.add_argument("--timeout", type=float, default=180.0, help="seconds per page to settle")
    c = sub.add_parser("compare", help="pixel differences between two screenshot dirs")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--diffs", help="write a diff image per differing pair here")
    c.add_argument("--tolerance", type=int, default=8, help="channel difference ignored")
    args = ap.parse_args()
    take(args) if args.cmd == "take" else compare(args)


if __name__ == "__main__":
    main()
