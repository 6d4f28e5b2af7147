"""A following student's own change of view, told from the teacher's (ui/class_drift.py): a
setting, the sidebar's text or the page changed since the last run, while the class view
version stayed, is the student's; a view taken from the teacher, a value Streamlit dropped and
a student already looking around are not. The session state is Streamlit's own (bare mode)."""

from __future__ import annotations

import pytest
import streamlit as st

from ui import class_drift
from ui.class_session import Membership


@pytest.fixture
def m():
    st.session_state.clear()
    st.session_state["attn_head"] = 3
    st.session_state["sb_text"] = "The cat sat."
    member = Membership("student", "class-1", member_key="member-1", version=7)
    class_drift.remember(member, "attention")
    yield member
    st.session_state.clear()


def test_nothing_changed_is_not_a_move(m):
    assert not class_drift.moved(m, "attention")
    assert not class_drift.moved(m, None)


@pytest.mark.parametrize("key, value", [("attn_head", 4), ("sb_text", "Another text.")])
def test_a_setting_or_the_text_changed_is_a_move(m, key, value):
    st.session_state[key] = value
    assert class_drift.moved(m, "attention") and class_drift.moved(m, None)


def test_a_setting_the_last_run_did_not_hold_is_not_compared(m):
    st.session_state["hs_stat"] = "special"
    assert not class_drift.moved(m, "attention")


def test_another_page_is_a_move_and_a_taken_view_is_not(m):
    assert class_drift.moved(m, "heads")
    m.version = 8  # the teacher's view was taken since the last run
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "heads")


def test_a_run_opening_the_teachers_new_view_cut_short_is_not_a_move(m):
    """The view's version counts as taken only when a run that opened it finishes
    (ui/class_follow.after_run): a run cut short by a rerun leaves the old version and a new
    page, which is the teacher's doing while the take is pending."""
    st.session_state[class_drift.TAKING_KEY] = (8, 1)
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "heads")
    del st.session_state[class_drift.TAKING_KEY]
    assert class_drift.moved(m, "heads")


def test_leaving_the_join_page_is_not_a_move(m):
    class_drift.remember(m, "join")
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "lessons") and not class_drift.moved(m, None)
    class_drift.remember(m, "attention")
    assert not class_drift.moved(m, "join")  # a rerun naming the join page: nothing to leave


def test_on_a_lesson_step_only_leaving_the_page_is_a_move(m):
    """A lesson step sets its own text and settings, and a browser may send an old value back
    after the step changed it: that is not the student's doing. Another page is."""
    class_drift.remember(m, "lessons")
    st.session_state["sb_text"] = "The text of the step before."
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "lessons") and not class_drift.moved(m, None)
    assert class_drift.moved(m, "attention")


def test_a_dropped_value_or_a_student_looking_around_is_not_a_move(m):
    del st.session_state["attn_head"]  # Streamlit forgot a widget the run did not draw
    assert not class_drift.moved(m, "attention")
    st.session_state["attn_head"] = 5
    m.following = False
    assert not class_drift.moved(m, "attention")


def test_check_turns_the_student_to_looking_around_once(m):
    calls = []
    st.session_state["attn_head"] = 4
    assert class_drift.check(m, "attention", lambda: calls.append("look"))
    assert calls == ["look"] and m.moved_away
    assert not class_drift.check(m, "attention", lambda: calls.append("again"))
    assert calls == ["look"]
