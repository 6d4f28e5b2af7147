"""In Chromium: a jump keeps the model. With tiny-induction in the sidebar, a click on a head
of the patching preset's grid opens tiny-induction's own head on the attention page (its own
tokens and its 2 × 4 heads), never MiniLM's. Then a lesson walked with Next and Previous.
The server's log is kept, and holds no Streamlit warning at the end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "browser")]

from test_browser import CHROMIUM, _click_head, _free_port, _settle, _wait_title  # noqa: E402
from test_browser import browser  # noqa: E402,F401 - the Chromium fixture

WARNING = re.compile(r"WARNING|Warning:|was created with a default value")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on 127.0.0.1, its output in a log file: (url, log path)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    log = tmp_path_factory.mktemp("server") / "server.log"
    port = _free_port()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address",
             "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=out,
            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the app did not start within 60 s")
    yield url, log
    proc.terminate()
    proc.wait(timeout=10)


def _open(browser, url: str):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    _settle(page)
    if page.get_by_text("Page not found").count():  # Streamlit's first-visit notice (#9992)
        page.keyboard.press("Escape")
        page.get_by_text("Page not found").wait_for(state="detached", timeout=10_000)
    return page


def _page_caption(page) -> str:
    """The attention page's line on the model it draws (in the page, not the sidebar)."""
    main = page.locator("[data-testid='stMain']")
    return main.get_by_text(re.compile(r"\d+ layers × \d+ heads")).first.text_content()


def test_the_patching_head_click_opens_tiny_inductions_own_head(served, browser):  # noqa: F811
    url, _ = served
    page = _open(browser, url + "/patching?model=tiny-induction")
    grid = page.locator(".js-plotly-plot").nth(1)  # the residual grid, then the head grid
    _click_head(page, grid, 1, 2, n_heads=4)
    _wait_title(page, "layer 1, head 2")
    _settle(page)
    assert "/attention" in page.url and "model=tiny-induction" in page.url
    caption = _page_caption(page)
    assert caption.startswith("tiny-induction") and "2 layers × 4 heads" in caption, caption
    ticks = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')][0]"
                          ".data[0].x.map(String)")
    assert ticks and not any("CLS" in t or "SEP" in t or t.startswith("##") for t in ticks)
    assert not page.locator("[data-testid='stException']").count()
    page.close()


def test_the_walkthroughs_link_to_the_attention_page_keeps_the_model(served, browser):  # noqa: F811
    url, _ = served
    page = _open(browser, url + "/walkthrough?model=tiny-induction&text=abcabc&step=999")
    page.get_by_text("Attention ▸").first.click()
    _wait_title(page, "layer 0, head 0")
    _settle(page)
    caption = _page_caption(page)
    assert caption.startswith("tiny-induction") and "2 layers × 4 heads" in caption, caption
    page.close()


def test_a_lesson_walked_with_next_and_previous(served, browser):  # noqa: F811
    url, _ = served
    page = _open(browser, url + "/lessons?lesson=reading-heatmaps&step=4")
    assert "average of" in page.locator(".js-plotly-plot .gtitle").first.text_content()
    page.get_by_role("button", name="Next ▶").last.click()
    _wait_title(page, ", head ")  # step 5 names one head: not step 4's average any more
    _settle(page)
    assert "average" not in page.locator(".js-plotly-plot .gtitle").first.text_content()
    page.get_by_role("button", name="◀ Previous").last.click()
    _settle(page)
    assert not page.locator("[data-testid='stException']").count()
    page.close()


def test_the_server_log_holds_no_warning(served):
    _, log = served
    lines = [line for line in log.read_text(encoding="utf-8").splitlines()
             if WARNING.search(line)]
    assert lines == []
