"""A setting the teacher moves inside a lesson step travels with the step: the class's view is
the step's link with the changed settings (/lessons?lesson=<id>&step=<n>&emlayer=4), and a
student's step opens with them. The same link opens the same step in any browser. AppTest
sessions sharing a real SQLite store; the lesson is an operator's lesson file whose step runs
a whole page with its own slider (the Embeddings page)."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from class_lessons import LESSON_ID, write_lesson  # noqa: E402
from page_links import open_lesson  # noqa: E402
from test_live_class import _clean, bar, poll, store  # noqa: E402, F401  (store: a fixture)
from test_live_class_answers import student_in_page, teacher_on_step  # noqa: E402
import test_live_class_answers  # noqa: E402

pytestmark = pytest.mark.app

@pytest.fixture
def lesson_folder(tmp_path, monkeypatch):
    folder = tmp_path / "lessons"
    folder.mkdir()
    write_lesson(folder)
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(folder))
    monkeypatch.setattr(test_live_class_answers, "LESSON", LESSON_ID)
    return folder


def test_a_slider_the_teacher_moves_in_a_step_reaches_the_students_step(store, lesson_folder):
    teacher, new = teacher_on_step(store, 1)  # the step's own link while nothing is moved
    assert teacher.session_state["emb_layer"] == 2
    _clean(teacher.slider(key="emb_layer").set_value(4).run())
    assert store.view(new.class_id).link == "/lessons?lesson=layers-class&step=1&emlayer=4"
    student = student_in_page(new, "lessons")
    assert student.session_state["emb_layer"] == 4
    assert student.slider(key="emb_layer").value == 4
    assert student.query_params["lesson"] == "layers-class"
    _clean(teacher.slider(key="emb_layer").set_value(2).run())  # back to the step's own
    assert store.view(new.class_id).link == "/lessons?lesson=layers-class&step=1"


def test_a_step_link_with_a_changed_head_opens_the_step_with_it():
    at = open_lesson("reading-heatmaps", 1)
    own = at.session_state["attn_head"]
    other = (own + 1) % 12
    at = open_lesson("reading-heatmaps", 1, head=other)
    assert not at.exception, at.exception
    assert at.session_state["attn_head"] == other
    chart = next(c for c in at.get("plotly_chart") if c.key == "attn_heatmap")
    title = json.loads(chart.proto.spec)["layout"]["title"]["text"]
    assert f"head {other}" in title
    bad = open_lesson("reading-heatmaps", 1, head="<b>99</b>")  # unreadable: the step's own
    assert not bad.exception and bad.session_state["attn_head"] == own


def test_a_slider_a_following_student_moves_in_a_step_is_looking_around(store, lesson_folder):
    """On a step that runs a whole page, a student's own slider counts as looking around; the
    value the step showed before the teacher moved it, sent back by a browser that had not
    drawn the new one yet, does not."""
    teacher, new = teacher_on_step(store, 1)
    student = student_in_page(new, "lessons")
    assert student.session_state["emb_layer"] == 2
    _clean(teacher.slider(key="emb_layer").set_value(4).run())
    poll(student)
    assert student.session_state["emb_layer"] == 4
    student.session_state["emb_layer"] = 2  # stale: what this screen showed before
    _clean(student.run())
    assert student.session_state["_class"].following
    assert "Following the teacher" in bar(student)
    _clean(student.slider(key="emb_layer").set_value(5).run())
    assert not student.session_state["_class"].following
    assert "You changed the view yourself" in bar(student)
    assert "0 following · 1 looking around · 1 joined" in bar(_clean(teacher.run()))


def test_the_walkthroughs_own_step_travels_beside_the_lessons_step(store, monkeypatch):
    """The walkthrough page's setting "step" and the lesson's step share a name in links: in a
    lesson step's link the walkthrough's is "wkstep", so both reach the student."""
    monkeypatch.setattr(test_live_class_answers, "LESSON", "forward-pass")
    teacher, new = teacher_on_step(store, 2)
    own = teacher.session_state["wk_step"]
    teacher.session_state["wk_step"] = own + 1  # the step's figure has no control for it
    _clean(teacher.run())
    link = store.view(new.class_id).link
    assert link == f"/lessons?lesson=forward-pass&step=2&wkstep={own + 1}"
    student = student_in_page(new, "lessons")
    assert student.query_params["lesson"] == "forward-pass"
    assert student.query_params["step"] == "2"
    assert student.session_state["wk_step"] == own + 1
    assert student.session_state["_lesson_at"] == ("forward-pass", 2)
