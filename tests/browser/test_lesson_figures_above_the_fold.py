"""Chromium at 1400 × 900 and 800 × 900: every step of every bundled lesson, opened from its
link (and its question answered, when it has one), shows the top of its one figure above the
fold, and no other chart of its page. At 800 × 900 the figure of a question step comes under
the question and its answer, in one column: there it starts within the second screen. One
server and one browser for all of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from teaching.format import parse_lesson
from test_browser import _settle, browser, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled")
           for p in sorted((ROOT / "teaching" / "bundled").glob("*.toml"))]
BUNDLED_STEPS = [(lesson, number) for lesson in LESSONS
                 for number in range(1, len(lesson.steps) + 1)]
FOLD = 900
FIGURE = ".st-key-lesson_figure"
# What a step's figure is on screen: a plot, a table of numbers (a walkthrough step with no
# plot), or a training step's Start button (its plots appear once a run starts).
DRAWN = (f"{FIGURE} .js-plotly-plot, {FIGURE} [data-testid=stDataFrame], "
         f"{FIGURE} [data-testid=stButton]")


QUESTION = "[class*=st-key-lesson_choice_], .st-key-lesson_cell_box"


def _answer(page, step) -> None:
    """Any answer: right or wrong, answering shows the figure."""
    if step.question.kind == "choice":
        page.locator("[class*=st-key-lesson_choice_] [role=radiogroup] label").first.click()
        _settle(page)  # the choice's rerun: until it ends, the old button may still be there
        page.get_by_role("button", name="Check my answer").first.click()
    else:
        box = page.locator(".st-key-lesson_cell_box input[role=combobox]")
        box.click()
        page.wait_for_timeout(1000)
        box.press("ArrowDown")
        box.press("Enter")


def open_step(page, server: str, lesson, number: int, extra: str = "") -> None:
    """Open step `number` of the lesson from its link (with `extra`: "&projector=1"), answer
    its question when it has one (its figure hidden until then), and wait for the figure."""
    step = lesson.steps[number - 1]
    page.goto(f"{server}/lessons?lesson={lesson.id}&step={number}{extra}",
              wait_until="domcontentloaded")
    page.get_by_text(f"Step {number} of {len(lesson.steps)}").first.wait_for(timeout=240_000)
    # the step's facts are worked out (a training run, on a busy machine, takes minutes)
    page.locator(DRAWN if step.question is None else QUESTION).first.wait_for(timeout=300_000)
    _settle(page)
    if step.question is not None:
        assert page.locator(DRAWN).count() == 0, (lesson.id, number)  # hidden first
        _answer(page, step)
    page.locator(DRAWN).first.wait_for(timeout=300_000)
    _settle(page)


def _below_the_fold(page, server: str, steps, shots: str = "", after_question: int = 1) -> list:
    """Open each (lesson, step number) from its link: the steps whose figure's top is below the
    fold, with that top; a chart outside a step's figure fails at once. `shots`: a file name
    start under which each step's screen is saved. `after_question`: in how many screens a
    question step's figure must start (on a narrow screen it comes under the answer)."""
    below = []
    for lesson, number in steps:
        step = lesson.steps[number - 1]
        open_step(page, server, lesson, number)
        top = page.locator(DRAWN).first.bounding_box()["y"]
        outside = page.locator(".js-plotly-plot").count() - page.locator(
            f"{FIGURE} .js-plotly-plot").count() - (step.question is not None and
                                                    step.question.kind == "cell")
        assert outside == 0, (lesson.id, number, "a chart outside the step's figure")
        if shots:
            page.screenshot(path=f"{shots}_{lesson.id}_{number}.png")
        if top >= page.viewport_size["height"] * (after_question if step.question else 1):
            below.append((lesson.id, number, round(top)))
    return below


@pytest.mark.parametrize("width", [1400, 800])
def test_every_lesson_step_shows_its_figure_above_the_fold(server, browser, width,  # noqa: F811
                                                           tmp_path):
    page = browser.new_page(viewport={"width": width, "height": FOLD})
    below = _below_the_fold(page, server, BUNDLED_STEPS, str(tmp_path / f"{width}"),
                            after_question=1 if width >= 1000 else 2)
    page.close()
    assert below == [], f"figures whose top is below the fold (y ≥ {FOLD}): {below}"
