"""A student sees only what is true for them on a live lesson step: no "the figure appears
here once you have answered" once they have, no link for sending a class to the step (the
teacher's), and one "Look around" button."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import page_text  # noqa: E402
from test_live_class import _clean, store  # noqa: E402, F401  (store: a fixture)
from test_live_class_answers import LESSON, student_in, teacher_on_step  # noqa: E402

pytestmark = pytest.mark.app

WAITING = "The figure appears here once you have answered"
SEND = "Send a class to this step"


def test_a_student_who_answered_reads_only_what_is_true_for_them(store):
    teacher, new = teacher_on_step(store, 3)
    assert SEND in page_text(teacher, ("caption",))  # the teacher's own tool
    student = student_in(new)
    said = page_text(student, ("caption", "info"))
    assert WAITING in said and SEND not in said
    assert [b.key for b in student.button if b.label == "Look around"] == ["class_look"]
    student.radio(key=f"lesson_choice_{LESSON}_3").set_value("exactly one").run()
    _clean(student.button(key="lesson_check").click().run())
    said = page_text(student, ("caption", "info"))
    assert "Your answer is in" in said
    assert WAITING not in said and SEND not in said
