"""AppTest: the lesson list shows the course by its units, each lesson's steps and minutes,
and "Continue where I left off" reopens the step after the last one the learner finished."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_lesson, switch  # noqa: E402

from bundled_lessons import LESSONS  # noqa: E402
from teaching.syllabus import minutes, units  # noqa: E402
from ui.text import md_escape  # noqa: E402

pytestmark = pytest.mark.app


def _said(at, kind: str) -> str:
    return " ".join(str(el.value) for el in at.get(kind))


def test_the_list_shows_the_units_in_order_with_each_lessons_length():
    at = open_lesson()
    assert not at.exception, at.exception
    headers = [str(h.value) for h in at.subheader]
    ids = {lesson.id for lesson in LESSONS}
    shown = [unit for unit in units() if ids & set(unit.lessons)]  # units with a lesson offered
    assert len(shown) >= 2
    assert headers == [f"{n}. {unit.title}" for n, unit in enumerate(shown, 1)]
    captions = _said(at, "caption")
    for lesson in LESSONS:
        assert f"{len(lesson.steps)} steps · about {minutes(lesson)} min" in captions, lesson.id
    assert "lesson_continue" not in [b.key for b in at.button]  # nothing to continue yet


def test_continue_where_i_left_off_opens_the_next_step():
    lesson = next(lesson for lesson in LESSONS  # step 2 has no question: finished once shown
                  if len(lesson.steps) >= 3 and lesson.steps[1].question is None)
    at = open_lesson(lesson.id, 2)
    assert not at.exception, at.exception
    at.query_params.clear()
    switch(at, "lessons").run()
    assert not at.exception, at.exception
    assert f"{md_escape(lesson.title)}, step 3 of {len(lesson.steps)}" in _said(at, "markdown")
    at.button(key="lesson_continue").click().run()
    assert not at.exception, at.exception
    assert at.query_params["lesson"] in (lesson.id, [lesson.id])
    assert at.query_params["step"] in ("3", ["3"])
