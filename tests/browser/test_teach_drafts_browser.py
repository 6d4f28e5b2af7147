"""In Chromium: a Teach draft survives a reload of the page (it is kept on the server for this
browser), and a second browser starts with none of it."""

from __future__ import annotations

from test_browser import _settle
from test_browser import browser  # noqa: F401 - the Chromium fixture
from test_jumps_browser import served  # noqa: F401 - the logged server


def test_a_reload_keeps_the_draft_and_another_browser_has_none(served, browser):  # noqa: F811
    url, _ = served
    context = browser.new_context(viewport={"width": 1400, "height": 1400})
    page = context.new_page()
    page.goto(url + "/heads?model=tiny-induction&text=abcabc", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    _settle(page)
    page.get_by_role("button", name="Record this view as a step").click()
    page.get_by_text("Draft lesson: 1 step").wait_for(timeout=60_000)
    page.goto(url + "/teach", wait_until="domcontentloaded")
    page.get_by_text("Step 1: Head statistics · tiny-induction").wait_for(timeout=60_000)
    page.reload(wait_until="domcontentloaded")  # a reload: a new session, the same browser
    page.get_by_text("Step 1: Head statistics · tiny-induction").wait_for(timeout=60_000)
    context.close()
    other = browser.new_context().new_page()  # another browser: its own cookies
    other.goto(url + "/teach", wait_until="domcontentloaded")
    other.get_by_text("Record this view as a step").first.wait_for(timeout=60_000)
    _settle(other)
    assert not other.get_by_text("Step 1: Head statistics").count()
    other.context.close()
