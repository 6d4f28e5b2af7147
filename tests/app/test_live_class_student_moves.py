"""A following student who changes their own view, in AppTest sessions sharing a real SQLite
store: on a lesson step the teacher moves the steps (no Previous/Next, one line saying so
instead, and one "Look around": the bar's); anywhere else a change the student makes (a slider, another page) turns them
to looking around, said in their bar and counted in the teacher's, and the teacher's next
change leaves them where they are. Following again takes the teacher's view back."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import switch  # noqa: E402
from test_live_class import _clean, bar, join, poll, start_class, store  # noqa: E402, F401
from test_live_class_answers import LESSON, student_in, teacher_on_step  # noqa: E402

pytestmark = pytest.mark.app


def count(teacher) -> str:
    return bar(_clean(teacher.run()))


def test_on_a_lesson_step_the_teacher_moves_the_steps(store):
    teacher, new = teacher_on_step(store, 1)
    student = student_in(new)
    keys = {b.key for b in student.button}
    assert not keys & {"lesson_prev_top", "lesson_next_top", "lesson_next_bottom"}
    assert bar(student).count("Your teacher moves the class from step to step") == 1  # once
    looks = [b for b in student.button if b.label == "Look around"]
    assert [b.key for b in looks] == ["class_look"]  # one "Look around": the bar's
    _clean(student.button(key="class_look").click().run())
    assert "Looking around on your own" in bar(student)
    assert "0 following · 1 looking around · 1 joined" in count(teacher)
    _clean(student.button(key="lesson_next_top").click().run())  # their own pace now
    assert student.query_params["step"] == "2"
    teacher.button(key="lesson_next_top")  # the teacher keeps their own buttons
    assert "Your teacher moves the class" not in bar(teacher)


def test_a_slider_moved_while_following_turns_the_student_to_looking_around(store):
    teacher, m = start_class()
    student = join(m.join_code)
    switch(teacher, "attention").run()
    poll(student)
    assert "Following the teacher" in bar(student)
    _clean(student.run())  # a run that changes nothing keeps them following
    assert student.session_state["_class"].following
    head = student.session_state["attn_head"]
    _clean(student.slider(key="attn_head").set_value((head + 1) % 12).run())
    assert "You changed the view yourself" in bar(student)
    assert "0 following · 1 looking around · 1 joined" in count(teacher)
    teacher.slider(key="attn_layer").set_value(4).run()  # the teacher moves on
    poll(student)
    assert student.session_state["attn_head"] == (head + 1) % 12  # not pulled back
    assert student.session_state["attn_layer"] != 4
    _clean(student.button(key="class_follow").click().run())
    poll(student)
    assert "Following the teacher" in bar(student)
    assert student.session_state["attn_layer"] == 4
    assert "1 following · 0 looking around · 1 joined" in count(teacher)


def test_another_page_opened_while_following_is_looking_around(store):
    teacher, m = start_class()
    student = join(m.join_code)
    switch(teacher, "attention").run()
    poll(student)
    _clean(switch(student, "heads").run())
    assert "Looking around on your own" in bar(student)
    assert not student.session_state["_class"].following
    assert "0 following · 1 looking around" in count(teacher)


def _student_run(class_id: str, member_key: str) -> None:
    """A student's whole run on the page session_state["page"]: it takes the class's view, then
    finishes or is cut short (a new request: the view's take stays pending)."""
    import streamlit as st

    from ui import class_follow, class_session
    from ui.class_session import Membership

    st.session_state.setdefault(
        class_session.KEY, Membership("student", class_id, member_key=member_key))
    page = st.session_state.get("page", "attention")
    class_follow.before_run({}, page)
    if st.session_state.get("cut_short"):
        st.stop()
    class_follow.after_run(page)


def _cut_short_take(store, head: int = 5):
    """A following student on the teacher's attention view (head 3); the teacher moves the
    head, and the student's run that opens it is cut short."""
    from streamlit.testing.v1 import AppTest

    new = store.start_class()
    member = store.join(new.join_code, "Ann")
    store.set_view(new.teacher_key, "/attention?model=minilm&text=The+cat+sat.&head=3")
    at = AppTest.from_function(_student_run, args=(new.class_id, member.member_key),
                               default_timeout=300)
    _clean(at.run())
    assert at.session_state["attn_head"] == 3 and at.session_state["_class"].following
    store.set_view(new.teacher_key, f"/attention?model=minilm&text=The+cat+sat.&head={head}")
    at.session_state["cut_short"] = True
    _clean(at.run())
    assert at.session_state["attn_head"] == head  # written, not taken yet
    return at, new


@pytest.mark.parametrize("head", [5, 3])  # the teacher's; the one the browser last showed
def test_while_the_teachers_view_is_pending_its_values_are_no_move(store, head):
    at, new = _cut_short_take(store)
    at.session_state["attn_head"] = head
    _clean(at.run())
    assert at.session_state["_class"].following
    at.session_state["cut_short"] = False
    _clean(at.run())
    assert at.session_state["_class"].following and at.session_state["attn_head"] == 5
    assert store.headcount(new.teacher_key).following == 1


def test_a_slider_moved_while_the_teachers_view_is_pending_is_looking_around(store):
    at, new = _cut_short_take(store)
    at.session_state["attn_head"] = 9  # the student's own, before the take finished
    at.session_state["cut_short"] = False
    _clean(at.run())
    m = at.session_state["_class"]
    assert not m.following and m.moved_away
    assert at.session_state["attn_head"] == 9  # not pulled back to the teacher's
    assert store.headcount(new.teacher_key).looking_around == 1


def test_a_page_opened_while_the_teachers_view_is_pending_is_looking_around(store):
    at, new = _cut_short_take(store)
    at.session_state["page"] = "compare"
    _clean(at.run())
    assert not at.session_state["_class"].following
    assert store.headcount(new.teacher_key).looking_around == 1
