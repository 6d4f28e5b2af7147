"""Chromium: a teacher's lesson link, a question answered and revealed, the next step; a view
recorded as a step and the draft downloaded; a lesson file uploaded, broken and then good."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from teaching.format import parse_lesson
from test_browser import _settle, browser, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def _wait_text(page, words: str, timeout: int = 240_000) -> None:
    page.get_by_text(words).first.wait_for(timeout=timeout)


def test_open_a_lesson_link_answer_reveal_and_go_on(server, browser):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(server + "/lessons?lesson=reading-heatmaps&step=3", wait_until="domcontentloaded")
    _wait_text(page, "If you add up all the numbers in one row")
    _settle(page)
    assert page.locator(".js-plotly-plot").count() == 0  # hidden until the learner answers
    page.get_by_text("the number of tokens", exact=True).click()
    page.get_by_role("button", name="Check my answer").click()
    _wait_text(page, "Not quite")
    page.get_by_text("exactly one", exact=True).click()
    page.get_by_role("button", name="Check my answer").click()
    _wait_text(page, "Every row of every head adds up to one")
    page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)  # revealed
    assert "step=3" in page.url and "lesson=reading-heatmaps" in page.url
    page.get_by_role("button", name="Next ▶").first.click()
    _wait_text(page, "Many heads, one layer")
    page.wait_for_function("() => location.search.includes('step=4')", timeout=30_000)
    page.close()


def test_record_a_step_and_download_the_draft(server, browser, tmp_path):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(server + "/attention?layer=1&head=4", wait_until="domcontentloaded")
    page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)
    _settle(page)
    page.get_by_role("button", name="Record this view as a step").click()
    _wait_text(page, "Draft lesson: 1 step")
    page.get_by_role("link", name="Edit the draft").click()
    _wait_text(page, "Your lesson")
    _settle(page)
    with page.expect_download(timeout=60_000) as got:
        page.get_by_role("button", name="Download the lesson file").click()
    path = tmp_path / "lesson.toml"
    got.value.save_as(path)
    lesson = parse_lesson(path.read_bytes(), "downloaded")
    assert [s.page for s in lesson.steps] == ["attention"]
    assert lesson.steps[0].settings["layer"] == 1 and lesson.steps[0].settings["head"] == 4
    page.close()


def test_upload_a_broken_then_a_good_lesson_file(server, browser, tmp_path):  # noqa: F811
    good = (ROOT / "teaching" / "example_lesson.toml").read_text()
    broken = tmp_path / "broken.toml"
    broken.write_text(good.replace("[[steps]]\ntitle = \"Your turn\"", "[[steps]\ntitle = 1"))
    fine = tmp_path / "fine.toml"
    fine.write_text(good)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(server + "/teach", wait_until="domcontentloaded")
    _wait_text(page, "Open a lesson file")
    page.locator("input[type=file]").set_input_files(str(broken))
    page.wait_for_function(
        "() => /problem on line \\d+/.test(document.body.innerText)", timeout=60_000)
    text = page.inner_text("body")
    assert re.search(r"problem on line \d+: this is not valid TOML", text), text[-2000:]
    page.locator("input[type=file]").set_input_files(str(fine))
    _wait_text(page, "Opened “The word before” (2 steps).")
    page.get_by_role("button", name="Start it").click()
    _wait_text(page, "One head, one picture")
    page.close()
