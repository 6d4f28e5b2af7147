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
from test_live_class import _clean, store  # noqa: E402, F401  (store: a fixture)
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
