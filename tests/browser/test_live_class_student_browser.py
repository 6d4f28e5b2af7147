"""A following student in Chromium, beside a teacher (two browsers, one server, a SQLite class
store): on a lesson step the student has no Previous/Next but one line saying the teacher moves
the class from step to step; a slider the student moves turns them to looking around, said in their bar and counted in
the teacher's; a reload keeps them looking around, under their name. Screenshots of the
student's bar and lesson step at 1400×900 and 800×900 go to $LIVE_CLASS_SHOTS when it is set.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.browser.test_live_class_browser import (  # noqa: F401 - server, browser: fixtures
    HEATMAP_TITLE, _heatmap_title, _idle, _join, _nav, _shot, _start_class, browser, server,
)
from tests.class_lessons import write_lesson

pytestmark = pytest.mark.browser

WIDE, NARROW = {"width": 1400, "height": 900}, {"width": 800, "height": 900}


def _lesson_step(teacher, student) -> None:
    _nav(teacher, "Lessons")
    teacher.get_by_role("button", name="Start").first.click()
    student.get_by_text("Lesson: Reading an attention heatmap").wait_for(timeout=120_000)
    student.get_by_text("Your teacher moves the class from step to step").wait_for(timeout=60_000)
    _idle(student)


def test_a_following_student_on_a_lesson_step_and_after_moving_a_slider(server, browser):
    teacher = browser.new_context(viewport=WIDE).new_page()
    student_context = browser.new_context(viewport=WIDE)
    student = student_context.new_page()
    code = _start_class(teacher, server)
    _join(student, server, code)
    _lesson_step(teacher, student)
    assert student.get_by_role("button", name="Next ▶").count() == 0
    assert teacher.get_by_role("button", name="Next ▶").count() == 2  # the teacher's own
    _shot(student, "student-lesson-step-following-1400px")
    student.set_viewport_size(NARROW)
    _idle(student)
    _shot(student, "student-lesson-step-following-800px")
    student.set_viewport_size(WIDE)

    _nav(teacher, "Attention")  # on the lesson step's head: read it from the teacher's title
    _heatmap_title(teacher, "Layer ", timeout=180_000)
    _idle(teacher)
    layer, head = map(int, re.match(r"Layer (\d+), head (\d+)",
                                    teacher.evaluate(HEATMAP_TITLE)).groups())
    _heatmap_title(student, f"Layer {layer}, head {head}", timeout=180_000)
    _idle(student)
    teacher.get_by_text("1 following · 0 looking around · 1 joined").wait_for(timeout=10_000)
    student.wait_for_timeout(1_500)  # the run that drew the teacher's view has ended (a change
    # made while it still draws is told from the teacher's only for the values its link names:
    # ui/class_drift.py)
    student.locator('[data-testid="stSlider"]').nth(1).get_by_role("slider").press("ArrowRight")
    student.get_by_text("You changed the view yourself").wait_for(timeout=30_000)
    _heatmap_title(student, f"Layer {layer}, head {head + 1}")
    teacher.get_by_text("0 following · 1 looking around · 1 joined").wait_for(timeout=10_000)
    _shot(student, "student-moved-looking-around-1400px")
    teacher.locator('[data-testid="stSlider"]').nth(0).get_by_role("slider").press("ArrowRight")
    _heatmap_title(teacher, f"Layer {layer + 1}, head {head}")
    student.wait_for_timeout(3_000)  # six polls: the student is not pulled back
    _heatmap_title(student, f"Layer {layer}, head {head + 1}", timeout=1_000)

    student.reload(wait_until="domcontentloaded")  # back by itself, as it left
    student.get_by_text("Back in the class").wait_for(timeout=60_000)
    student.get_by_text("Looking around on your own").wait_for(timeout=10_000)
    assert student.get_by_text("Following the teacher").count() == 0
    teacher.get_by_text("0 following · 1 looking around · 1 joined").wait_for(timeout=10_000)
    student.set_viewport_size(NARROW)
    _idle(student)
    _shot(student, "student-back-looking-around-800px")
    student.goto(f"{server}/join", wait_until="domcontentloaded")  # a new session again:
    student.get_by_text("You are in the class as").wait_for(timeout=60_000)  # the name it
    assert student.get_by_text("Ann", exact=True).count() == 1  # joined under, shown back
    student.get_by_text("Looking around on your own").wait_for(timeout=10_000)
    _idle(student)
    student.get_by_role("button", name="Follow again").click()
    _heatmap_title(student, f"Layer {layer + 1}, head {head}", timeout=60_000)
    teacher.get_by_text("1 following · 0 looking around · 1 joined").wait_for(timeout=10_000)


def test_a_model_trained_in_the_teachers_browser_is_said_on_the_students_screen(server, browser):
    """The class's view names a model trained in the teacher's session (as the teacher's app
    publishes it: its label and trained=1; the training itself is the AppTest's part): the
    student sees the same page with the app's own small model of that task, and one sentence."""
    from urllib.parse import quote_plus

    from teaching.class_store import open_store

    teacher = browser.new_context(viewport=WIDE).new_page()
    student = browser.new_context(viewport=WIDE).new_page()
    code = _start_class(teacher, server)
    teacher.get_by_role("button", name="Show my teacher link").click()  # drawn when asked
    teacher.get_by_text("/teach?class=").wait_for(timeout=30_000)
    shown = teacher.locator('[data-testid="stCode"]').all_inner_texts()
    teacher_key = next(t.split("class=")[1].strip() for t in shown if "/teach?class=" in t)
    _join(student, server, code)
    open_store(os.environ["ATTENTION_LAB_CLASS_STORE"]).set_view(
        teacher_key, f"/attention?model={quote_plus('trained: induction')}&text="
        f"{quote_plus('a b c d a b c')}&trained=1")
    student.get_by_text("this screen cannot open").wait_for(timeout=120_000)
    _heatmap_title(student, "Layer ", timeout=180_000)
    # the sentence is in the class bar, which its own poll redraws after the page's run
    student.get_by_text("own small model trained on the same task").wait_for(timeout=30_000)
    _idle(student)
    said = student.locator('[data-testid="stMain"]').inner_text()
    assert "tiny-induction, the app's own small model trained on the same task" in said
    assert "trained: induction" not in said and "Could not load" not in said
    _shot(student, "student-teachers-trained-model-1400px")
    student.set_viewport_size(NARROW)
    _idle(student)
    _shot(student, "student-teachers-trained-model-800px")


@pytest.fixture(scope="module")
def lesson_server(tmp_path_factory):
    """A server with an operator's lessons folder: a step that runs a whole page, with its
    own slider."""
    from tests.browser.app_server import running_app

    folder = tmp_path_factory.mktemp("class-lessons")
    write_lesson(folder)
    saved = {k: os.environ.get(k) for k in ("ATTENTION_LAB_CLASS_STORE", "ATTENTION_LAB_LESSONS")}
    os.environ["ATTENTION_LAB_CLASS_STORE"] = f"sqlite:///{folder / 'classes.sqlite'}"
    os.environ["ATTENTION_LAB_LESSONS"] = str(folder)
    try:
        with running_app(folder / "server.log") as url:
            yield url
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


LAYER_SLIDER = ".st-key-emb_layer"  # the Embeddings page's layer slider (its widget key)


def _layer(page) -> str:
    return page.locator(LAYER_SLIDER).get_by_test_id("stSliderThumbValue").inner_text(
        timeout=60_000).strip()


def test_the_teachers_slider_in_a_lesson_step_reaches_the_students_step(lesson_server,
                                                                         browser):
    teacher = browser.new_context(viewport=WIDE).new_page()
    student = browser.new_context(viewport=WIDE).new_page()
    code = _start_class(teacher, lesson_server)
    _join(student, lesson_server, code)
    _nav(teacher, "Lessons")
    teacher.locator(".st-key-lesson_start_layers-class button").click()  # its Start
    student.get_by_text("Tokens move through the layers").first.wait_for(timeout=120_000)
    _idle(teacher)
    _idle(student)
    assert _layer(teacher) == "2" and _layer(student) == "2"
    teacher.locator(LAYER_SLIDER).get_by_role("slider").press("ArrowRight")
    student.wait_for_function(
        "() => { const s = document.querySelector('.st-key-emb_layer "
        "[data-testid=\"stSliderThumbValue\"]'); return s && s.innerText.trim() === '3'; }",
        timeout=60_000)
    _idle(student)
    student.locator(LAYER_SLIDER).scroll_into_view_if_needed()
    assert "Your teacher moves the class from step to step" in student.locator(
        '[data-testid="stMain"]').inner_text()
    _shot(student, "student-step-with-teachers-slider-1400px")
    student.set_viewport_size(NARROW)
    _idle(student)
    student.locator(LAYER_SLIDER).scroll_into_view_if_needed()
    _shot(student, "student-step-with-teachers-slider-800px")
