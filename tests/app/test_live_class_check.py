"""The concept check in a live class, in AppTest sessions sharing a real SQLite store: the
teacher gives the class the first check from the lesson list, the class's view becomes the
check (no question: each student answers at their own pace), a student's answer reaches the
store, and the teacher's screen shows the class's share right on that item's mix-up, and a CSV
with no name in it."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import APP, page_text, switch  # noqa: E402
from test_live_class import _clean, store  # noqa: E402, F401  (store: a fixture)
from test_live_class_answers import NAME, student_in  # noqa: E402

pytestmark = pytest.mark.app


def _teacher(store):
    from ui.class_session import Membership

    new = store.start_class()
    teacher = AppTest.from_file(APP, default_timeout=600)
    teacher.session_state["_class"] = Membership("teacher", new.class_id,
                                                 join_code=new.join_code,
                                                 teacher_key=new.teacher_key)
    switch(teacher, "lessons")
    _clean(teacher.run())
    return teacher, new


def _map(at: AppTest) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key == "class_check_map")
    return json.loads(chart.proto.spec)


def test_the_class_takes_the_first_check_and_the_teacher_sees_its_map(store):
    teacher, new = _teacher(store)
    keys = [b.key for b in teacher.button]
    assert "class_check_before" in keys and "check_start_before" not in keys  # not for themself
    _clean(teacher.button(key="class_check_before").click().run())
    assert store.view(new.class_id).link == "/lessons?check=before"
    assert "The class takes the first check" in [t.value for t in teacher.title]
    assert "Nobody has answered yet" in page_text(teacher, ("markdown",))

    student = _clean(student_in(new).run())
    question = student.radio(key="check_before_1")  # the first question, on their screen
    question.set_value(question.options[0]).run()
    _clean(student.button(key="check_answer").click().run())
    counts = store.tally(new.teacher_key, "check-before:1").counts
    assert counts == {question.options[0]: 1}

    _clean(teacher.run())
    assert "0 students have answered every question; 1 answered at least one." in page_text(
        teacher, ("markdown",))
    dots = _map(teacher)["data"]
    before = next(d for d in dots if d.get("name") == "before the course")
    shares = [x for x in before["x"] if x is not None]
    assert len(shares) == 1 and shares[0] in (0, 100)  # one student, right or not
    csv_button = next(b for b in teacher.get("download_button") if b.key == "class_check_csv")
    assert NAME not in str(csv_button.proto) and "Ann" not in str(csv_button.proto)
