"""A student's own answer survives the server side: a new session of the same browser (a
reload, a replica that died, a server restart) shows the answer the class already counts for
them, gets the teacher's reveal, and keeps following. AppTest sends no cookie, so the
browser's id (server/sessions.browser_id) is given here."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import APP, page_text, switch  # noqa: E402
from test_live_class import _clean, bar, poll  # noqa: E402
from test_live_class_answers import LESSON, teacher_on_step  # noqa: E402
from test_live_class import store as class_store  # noqa: E402, F401  (a fixture)
from test_live_class_rejoin import on_join_page  # noqa: E402

BROWSER = ["browser-teacher"]  # whose browser the next run comes from


@pytest.fixture
def store(class_store, monkeypatch):
    """The class test's fresh SQLite store. The teacher and the student are in two browsers:
    a teacher is remembered for their own browser, so one shared id would make the student's
    join page a teacher's page."""
    from server import sessions

    monkeypatch.setattr(sessions, "browser_id", lambda: BROWSER[0])
    BROWSER[0] = "browser-teacher"
    return class_store


def as_teacher(run):
    """Runs the teacher's session from the teacher's browser, then hands back to the student."""
    BROWSER[0] = "browser-teacher"
    try:
        return run()
    finally:
        BROWSER[0] = "browser-student"

pytestmark = pytest.mark.app


def joined_on_the_step(code: str, step: int):
    """This browser joins the class with its code and is on the teacher's step."""
    BROWSER[0] = "browser-student"
    first = on_join_page()
    first.text_input(key="class_code").input(code)
    _clean(first.button(key="class_join").click().run())
    first = poll(first)
    assert first.query_params["step"] == str(step)
    return first


def back_on_the_step(step: int):
    """The same browser in a new session (a reload of the step's address, or a replica that
    died): back in the class by itself, on the teacher's step."""
    again = AppTest.from_file(APP, default_timeout=300)
    again.query_params.update({"lesson": LESSON, "step": str(step)})
    _clean(switch(again, "lessons").run())
    assert again.session_state["_class"].rejoined_at
    _clean(again.run())  # the run after the one that took the class's view back
    assert again.query_params["step"] == str(step)
    return again


def test_a_choice_given_before_a_new_session_is_shown_and_revealed_in_it(store):
    teacher, new = teacher_on_step(store, 3)
    first = joined_on_the_step(new.join_code, 3)  # remembered for this browser
    first.radio(key=f"lesson_choice_{LESSON}_3").set_value("exactly one").run()
    _clean(first.button(key="lesson_check").click().run())
    assert "Your answer is in" in page_text(first, ("info",))

    again = back_on_the_step(3)  # a reload, or a replica that died
    said = page_text(again, ("info", "caption"))
    assert "Your answer is in; the teacher will reveal" in said
    assert "Pick one answer first" not in said and "once you have answered" not in said
    as_teacher(lambda: _clean(teacher.button(key="class_reveal").click().run()))
    from ui import class_follow

    assert class_follow.poll(again.session_state["_class"]) is True  # the reveal: a rerun
    poll(again)
    assert "Right" in page_text(again, ("success",))  # their own answer, checked
    assert "Following the teacher" in bar(again)
    assert store.tally(new.teacher_key, f"{LESSON}:3").counts == {"exactly one": 1}


def test_a_clicked_cell_given_before_a_new_session_is_shown_in_it(store):
    teacher, new = teacher_on_step(store, 2)
    first = joined_on_the_step(new.join_code, 2)
    _clean(first.selectbox(key="lesson_cell_box").set_value(1).run())
    question = f"{LESSON}:2"
    (picked,) = store.tally(new.teacher_key, question).counts

    again = back_on_the_step(2)
    assert "Your answer is in" in page_text(again, ("info",))
    from ui.lesson_question import ANSWERS_KEY

    got = again.session_state[ANSWERS_KEY][(LESSON, 2)]
    assert got["picked"] == first.session_state[ANSWERS_KEY][(LESSON, 2)]["picked"]
    assert got["share"] == pytest.approx(first.session_state[ANSWERS_KEY][(LESSON, 2)]["share"])
    assert store.tally(new.teacher_key, question).counts == {picked: 1}  # not sent twice
