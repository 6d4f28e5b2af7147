"""How long a class of 30 waits for the teacher's map of the concept check after the last
answer: the time from the 30th student's answer reaching the class store to the teacher's page
(Chromium, one app, a SQLite store) saying that 30 have answered.

Each round starts a class in the store, opens its teacher link in Chromium and the first check
(/lessons?check=before: the teacher's map), lets 30 students join through the store and 29 of
them answer; once the teacher's page counts 29, the 30th answers and the clock runs until it
counts 30. The teacher's map reads the store twice a second (app_pages/lessons/class_check.py).

    python bench/bench_class_check.py --rounds 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import repo_root  # noqa: F401 - the repository root on sys.path

from tests.harness.serve import start_app, stop_app, wait_healthy  # noqa: E402

STUDENTS = 30
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
COUNTED = ("w => (document.querySelector('[data-testid=\"stMain\"]') || {}).innerText"
           "?.includes(w)")


def _round(page, url: str, store) -> float:
    from classroom.check_map import question_id

    new = store.start_class()
    page.goto(f"{url}/teach?class={new.teacher_key}", wait_until="domcontentloaded")
    page.get_by_text("1 following", exact=False).or_(page.get_by_text("0 following")).first \
        .wait_for(timeout=180_000)  # the class bar: this page leads the class
    page.locator('[data-testid="stSidebarNav"] a', has_text="Lessons").first.click()
    page.get_by_role("button", name="Give the class the first check").click(timeout=180_000)
    page.get_by_text("Nobody has answered yet").wait_for(timeout=180_000)
    members = [store.join(new.join_code, client=f"10.0.{n // 200}.{n % 200}")
               for n in range(STUDENTS)]
    for m in members[:-1]:
        store.answer(m.class_id, m.member_key, question_id("before", 1), "a guess")
    page.wait_for_function(COUNTED, arg=f"{STUDENTS - 1} answered at least one",
                           timeout=180_000)
    last = members[-1]
    store.answer(last.class_id, last.member_key, question_id("before", 1), "a guess")
    start = time.monotonic()
    page.wait_for_function(COUNTED, arg=f"{STUDENTS} answered at least one", timeout=60_000,
                           polling=20)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from teaching.class_store import open_store

    folder = Path(tempfile.mkdtemp(prefix="class-check-bench-"))
    store_url = f"sqlite:///{folder / 'classes.sqlite'}"
    store = open_store(store_url)
    waits = []
    server, url = start_app(folder / "server.log", ATTENTION_LAB_CLASS_STORE=store_url)
    try:
        wait_healthy(url, time.perf_counter())
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1024, "height": 768})
            for n in range(args.rounds):
                waits.append(_round(page, url.rstrip("/"), store))
                print(f"round {n + 1}: {waits[-1]:.2f} s", flush=True)
            browser.close()
    finally:
        stop_app(server)
    waits.sort()
    p95 = waits[min(len(waits) - 1, round(0.95 * (len(waits) - 1)))]
    print(f"map after the last answer, {STUDENTS} students, {len(waits)} rounds: "
          f"p50 {statistics.median(waits):.2f} s, p95 {p95:.2f} s, max {waits[-1]:.2f} s "
          f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    sys.exit(main())
