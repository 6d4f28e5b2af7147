"""The concept check in a live class, in Chromium: the teacher gives the class the first check
from the lesson list, a following student gets its first question on their screen and answers
two, and the teacher's screen (1400 px, then the room's 1024 × 768 in projector mode) counts
them and draws the class's map. Screenshots in /tmp/class_check_*.png."""

from __future__ import annotations

import pytest

from tests.browser.test_live_class_browser import (  # noqa: F401 - fixtures
    _idle, _join, _nav, _projector, _start_class, _wait_title, browser, server,
)

pytestmark = pytest.mark.browser
TOO_WIDE = r"""() => [...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stMarkdownContainer"], [data-testid="stMain"] .js-plotly-plot')]
  .filter(e => e.getBoundingClientRect().right > innerWidth + 1).length"""


def _answer(student, number: int) -> None:
    student.get_by_text(f"question {number} of").wait_for(timeout=180_000)
    _idle(student)
    student.locator('[data-testid="stMain"] [role="radiogroup"] label').first.click()
    _idle(student)
    student.get_by_role("button", name="Answer", exact=True).click()


def test_the_class_takes_the_check_and_the_teacher_sees_the_map(server, browser):  # noqa: F811
    teacher = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    student = browser.new_context(viewport={"width": 800, "height": 900}).new_page()
    code = _start_class(teacher, server)
    _join(student, server, code)
    _nav(teacher, "Lessons")
    teacher.get_by_role("button", name="Give the class the first check").click()
    _wait_title(teacher, "The class takes the first check")
    teacher.get_by_text("Nobody has answered yet").wait_for(timeout=60_000)
    _answer(student, 1)
    _answer(student, 2)
    student.get_by_text("question 3 of").wait_for(timeout=180_000)
    _idle(student)
    student.screenshot(path="/tmp/class_check_student_800x900.png")
    assert student.evaluate(TOO_WIDE) == 0
    teacher.get_by_text("0 students have answered every question; 1 answered at least one."
                        ).wait_for(timeout=60_000)  # the live count, no click
    teacher.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    _idle(teacher)
    teacher.screenshot(path="/tmp/class_check_teacher_1400x900.png")
    assert teacher.evaluate(TOO_WIDE) == 0
    _projector(teacher)
    teacher.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    teacher.wait_for_timeout(500)
    teacher.screenshot(path="/tmp/class_check_teacher_projector_1024x768.png")
    assert teacher.evaluate(TOO_WIDE) == 0
    said = teacher.locator('[data-testid="stMain"]').inner_text()
    assert "Ann" not in said  # no names on the room's screen
