"""What a live class's polls cost the server: CPU seconds of the app's process per second while
a teacher and N students sit in a class and nobody does anything (every member's browser asks
the class's signal route twice a second; the server reruns nothing until the view changes),
against the same server with the same pages open and no class.

    OMP_NUM_THREADS=1 python bench/bench_class_poll.py --students 5 --seconds 20

Students are Chromium pages (Debian's chromium); the server uses a SQLite class store in a
temporary folder. CPU time is read from /proc/<pid>/stat (user + system) of the server.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.harness.serve import start_app, stop_app, wait_healthy  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CODE = re.compile(r"^[A-Z0-9]{3}-[A-Z0-9]{3}$")
IDLE = ("() => !document.querySelector('[data-testid=\"stStatusWidget\"] button')"
        " && !document.querySelector('[data-stale=\"true\"]')")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


FRAMES = {"n": 0}  # websocket messages the pages received from the server


def _page(browser):
    page = browser.new_context().new_page()
    page.on("websocket", lambda ws: ws.on("framereceived", lambda _: FRAMES.update(
        n=FRAMES["n"] + 1)))
    return page


def _open(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function("() => (document.querySelector('[data-testid=\"stMain\"]') || {})"
                           ".innerText?.length > 40", timeout=120_000)
    page.wait_for_timeout(500)
    page.wait_for_function(IDLE, timeout=180_000)


def _class(browser, base: str, students: int) -> list:
    teacher = _page(browser)
    _open(teacher, f"{base}teach")
    teacher.get_by_role("button", name="Start a class").click()
    teacher.get_by_text("Scan to join").wait_for(timeout=60_000)
    code = next(t.strip() for t in teacher.locator("h1").all_inner_texts()
                if CODE.match(t.strip()))
    pages = [teacher]
    for _ in range(students):
        page = _page(browser)
        _open(page, f"{base}join?code={code}")
        page.get_by_role("button", name="Join").click()
        page.get_by_text("Following the teacher").wait_for(timeout=60_000)
        pages.append(page)
    teacher.locator('[data-testid="stSidebarNav"] a', has_text="Head statistics").first.click()
    for page in pages:
        page.wait_for_function("() => [...document.querySelectorAll('h1')].some(h =>"
                               " h.innerText.trim() === 'Head statistics')", timeout=180_000)
        page.wait_for_function(IDLE, timeout=180_000)
    return pages


def _plain(browser, base: str, students: int) -> list:
    pages = []
    for _ in range(students + 1):
        page = _page(browser)
        _open(page, f"{base}heads")
        pages.append(page)
    return pages


def measure(pid: int, seconds: float, pages: list) -> tuple[float, float]:
    """(server CPU seconds per second, messages per second each page received)."""
    pages[0].wait_for_timeout(3000)  # the last runs finish
    start, wall, frames = cpu_seconds(pid), time.monotonic(), FRAMES["n"]
    pages[0].wait_for_timeout(seconds * 1000)  # playwright's loop keeps counting meanwhile
    elapsed = time.monotonic() - wall
    return ((cpu_seconds(pid) - start) / elapsed,
            (FRAMES["n"] - frames) / elapsed / len(pages))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="class-poll-"))
    started = time.perf_counter()
    server, base = start_app(folder / "server.log", ATTENTION_LAB_CLASS_STORE=(
        f"sqlite:///{folder / 'classes.sqlite'}"))
    try:
        wait_healthy(base, started)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            results = {}
            for name, build in (("no class", _plain), ("in a class", _class)):
                pages = build(browser, base, args.students)
                results[name] = measure(server.pid, args.seconds, pages)
                for page in pages:
                    page.context.close()
            browser.close()
    finally:
        stop_app(server)
    print(f"{args.students} students + 1 teacher, idle on Head statistics, {args.seconds:.0f} s:")
    for name, (load, frames) in results.items():
        print(f"  {name}: server CPU {load:.3f} s per second; each page gets {frames:.1f} "
              "messages per second")
    extra = results["in a class"][0] - results["no class"][0]
    print(f"  the class's polls: {extra:.3f} s per second, "
          f"{1000 * extra / (2 * (args.students + 1)):.1f} ms of CPU per poll")


if __name__ == "__main__":
    main()
