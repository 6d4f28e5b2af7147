"""In Chromium: a jump keeps the model. With tiny-induction in the sidebar, a click on a head
of the patching preset's grid opens tiny-induction's own head on the attention page (its own
tokens and its 2 × 4 heads), never MiniLM's. Then a lesson walked with Next and Previous.
The server's log is kept, and holds no Streamlit warning at the end."""

from __future__ import annotations

import re

import pytest

from app_server import running_app
from server_log import warnings_in
from test_browser import _click_head, _settle, _wait_title
from test_browser import browser  # noqa: F401 - the Chromium fixture


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on 127.0.0.1, its output in a log file: (url, log path); at the end the log
    must hold no Streamlit warning."""
    log = tmp_path_factory.mktemp("server") / "server.log"
    with running_app(log) as url:
        yield url, log


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
    assert warnings_in(log) == []
