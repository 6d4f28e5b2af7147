"""A live class on a lesson question, in two AppTest sessions sharing a real SQLite store: a
following student's answer arrives in the teacher's live count (names only when the teacher
ticks "Show names", as plain text), the student's step waits for the reveal, and the teacher's
reveal reaches the student, with the model's answer drawn beside the class's."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import APP, page_text, switch  # noqa: E402
from test_live_class import _clean, store  # noqa: E402, F401  (store: a fixture)

pytestmark = pytest.mark.app

LESSON = "reading-heatmaps"  # step 2 asks for a cell, step 3 is a choice
NAME = "Ann <b>*x*</b>"


def teacher_on_step(store, step: int):
    """A teacher's session that leads a new class, on one step of the lesson."""
    from ui.class_session import Membership

    new = store.start_class()
    teacher = AppTest.from_file(APP, default_timeout=600)
    teacher.session_state["_class"] = Membership("teacher", new.class_id,
                                                 join_code=new.join_code,
                                                 teacher_key=new.teacher_key)
    teacher.query_params.update({"lesson": LESSON, "step": str(step)})
    switch(teacher, "lessons")
    _clean(teacher.run())
    assert store.view(new.class_id).link == f"/lessons?lesson={LESSON}&step={step}"
    return teacher, new


def student_in_page(new, page: str = "lessons") -> AppTest:
    """A student who joined the class by code, now on the teacher's page."""
    student = AppTest.from_file(APP, default_timeout=600)
    student.query_params["code"] = new.join_code
    switch(student, "join").run()
    student.text_input(key="class_name").input(NAME)
    _clean(student.button(key="class_join").click().run())
    assert student.session_state["_class_page"] == page
    return switch(student, page)


def student_in(new) -> AppTest:
    return student_in_page(new, "lessons")


def tally_figure(at: AppTest) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key == "class_tally_chart")
    return json.loads(chart.proto.spec)


def test_a_choice_is_counted_revealed_to_everyone_and_drawn_beside_the_model(store):
    teacher, new = teacher_on_step(store, 3)
    assert teacher.button(key="class_reveal")  # not revealed yet
    student = student_in(new)
    student.radio(key=f"lesson_choice_{LESSON}_3").set_value("it depends on the sentence").run()
    _clean(student.button(key="lesson_check").click().run())
    assert "Your answer is in; the teacher will reveal" in page_text(student, ("info",))
    assert not student.warning and not student.success  # the step keeps its answer
    question = f"{LESSON}:3"
    assert store.tally(new.teacher_key, question).counts == {"it depends on the sentence": 1}

    bars = tally_figure(_clean(teacher.run()))["data"][0]
    assert bars["x"] == [0, 0, 1]
    assert not teacher.dataframe  # no names unless asked
    teacher.checkbox(key="class_show_names").check().run()
    names = teacher.dataframe[0].value
    assert names["names"].tolist() == [NAME]  # plain text in a table, as typed

    _clean(teacher.button(key="class_reveal").click().run())
    assert question in store.view(new.class_id).revealed
    bars = tally_figure(teacher)["data"][0]
    assert bars["marker"]["color"][0] != bars["marker"]["color"][2]  # the model's answer stands out
    _clean(student.run())
    assert "Your answer is in" not in page_text(student, ("info",))
    assert "Not quite: you chose" in page_text(student, ("warning",))


def test_a_clicked_cell_is_counted_over_the_key_tokens_and_the_row_drawn_after_the_reveal(store):
    teacher, new = teacher_on_step(store, 2)
    student = student_in(new)
    from model import load_model
    from teaching.facts import find_row

    trace = load_model("minilm").run("The cat sat on the mat because it was warm.")
    row = find_row(trace.tokens, "sat")
    column = 1  # "the"
    _clean(student.selectbox(key="lesson_cell_box").set_value(column).run())
    assert "Your answer is in" in page_text(student, ("info",))
    question = f"{LESSON}:2"
    assert store.tally(new.teacher_key, question).counts == {f"{row},{column}": 1}

    figure = tally_figure(_clean(teacher.run()))
    assert len(figure["data"]) == 1 and figure["data"][0]["y"][column] == 1.0
    _clean(teacher.button(key="class_reveal").click().run())
    figure = tally_figure(teacher)
    assert [d["name"] for d in figure["data"]] == ["the class's picks", "the model's attention"]
    layer, head = teacher.session_state["attn_layer"], teacher.session_state["attn_head"]
    wanted = trace.attentions[layer, head, row].tolist()
    assert figure["data"][1]["y"] == pytest.approx(wanted, abs=1e-6)
    _clean(student.run())
    assert "Your answer is in" not in page_text(student, ("info",))


def test_a_student_looking_around_answers_on_their_own(store):
    teacher, new = teacher_on_step(store, 3)
    student = student_in(new)
    _clean(student.button(key="class_look").click().run())
    student.radio(key=f"lesson_choice_{LESSON}_3").set_value("exactly one").run()
    _clean(student.button(key="lesson_check").click().run())
    assert "Right" in page_text(student, ("success",))  # no wait for the teacher
    assert store.tally(new.teacher_key, f"{LESSON}:3").answered == 0


def test_an_uploaded_lesson_is_followed_as_the_view_its_step_opens(store):
    """Only the teacher's browser has an uploaded lesson, so the class gets the step's page,
    model and text instead of a lesson link the students could not open."""
    from teaching.format import parse_lesson
    from ui.class_session import Membership
    from ui.lesson_library import EXAMPLE_FILE

    lesson = parse_lesson(EXAMPLE_FILE.read_bytes(), "my-upload", "upload")
    new = store.start_class()
    teacher = AppTest.from_file(APP, default_timeout=600)
    teacher.session_state["_class"] = Membership("teacher", new.class_id,
                                                 join_code=new.join_code,
                                                 teacher_key=new.teacher_key)
    teacher.session_state["lesson_uploads"] = {lesson.id: lesson}
    teacher.query_params.update({"lesson": lesson.id, "step": "1"})
    switch(teacher, "lessons")
    _clean(teacher.run())
    link = store.view(new.class_id).link
    assert link.startswith("/attention?") and "lesson=" not in link
    student = student_in_page(new, "attention")
    assert student.session_state["sb_text"] == lesson.steps[0].text
