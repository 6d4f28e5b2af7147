"""A following student's own change of view, told from the teacher's (ui/class_drift.py): a
setting, the sidebar's text or the page changed since the last run, while the class view
version stayed, is the student's; a view taken from the teacher, a value Streamlit dropped, a
value the app wrote over coming back (stale) and a student already looking around are not.
While a take of the teacher's view is pending, what that view sets is the teacher's. The
session state is Streamlit's own (bare mode)."""

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


def test_a_choice_sent_back_empty_is_its_default_not_a_move(m):
    """The Attention page's "More" control (a segmented control that can be emptied, drawn as
    its first view then) came back empty from a browser under load with nobody touching it."""
    st.session_state["attn_view"] = "All heads"
    class_drift.remember(m, "attention")
    st.session_state["attn_view"] = None
    assert not class_drift.moved(m, "attention") and not class_drift.moved(m, None)
    st.session_state["attn_view"] = "Token lines"  # another view: the student's own
    assert class_drift.moved(m, None)


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
    (ui/class_follow.after_run): a run cut short by a rerun leaves the old version and the
    teacher's new page, which is the teacher's doing while the take is pending."""
    st.session_state[class_drift.TAKING_KEY] = (8, 1)
    class_drift.taking(8, "/heads?model=minilm&text=The+cat+sat.&hstat=special")
    st.session_state["hs_stat"] = "special"  # what the teacher's view set
    assert not class_drift.moved(m, "heads") and not class_drift.moved(m, "attention")
    del st.session_state[class_drift.TAKING_KEY]
    assert class_drift.moved(m, "heads")


def test_without_knowing_the_pending_view_nothing_is_a_move(m):
    st.session_state[class_drift.TAKING_KEY] = (8, 1)  # no `taking` for version 8
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "heads") and not class_drift.moved(m, None)


def _pending(link: str, version: int = 8) -> None:
    st.session_state[class_drift.TAKING_KEY] = (version, 1)
    class_drift.taking(version, link)


def test_another_page_while_a_take_is_pending_is_a_move(m):
    """Neither the page last shown nor the teacher's: the student clicked it."""
    _pending("/heads?model=minilm&text=The+cat+sat.")
    assert class_drift.moved(m, "compare")


def test_a_value_while_a_take_is_pending_is_a_move_unless_shown_or_the_teachers(m):
    """The cut-short run wrote the teacher's head (5); the browser may still send the one it
    showed (3); any other head is the student's."""
    _pending("/attention?model=minilm&text=The+cat+sat.&head=5")
    for head in (5, 3):
        st.session_state["attn_head"] = head
        assert not class_drift.moved(m, "attention") and not class_drift.moved(m, None)
    st.session_state["attn_head"] = 9
    assert class_drift.moved(m, "attention") and class_drift.moved(m, None)
    st.session_state["attn_head"] = 5
    st.session_state["sb_text"] = "A text the student typed."
    assert class_drift.moved(m, "attention")


def test_a_setting_the_pending_view_leaves_to_its_page_is_not_compared(m):
    """The teacher's link leaves the head at the page's choice: a cut-short run may have
    written any head, so it is not told apart (said in the module's docstring)."""
    _pending("/attention?model=minilm&text=The+cat+sat.")
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "attention")


def test_views_opened_by_earlier_cut_short_runs_are_the_teachers_too(m):
    _pending("/attention?model=minilm&text=The+cat+sat.&head=5")
    assert not class_drift.check(m, "attention", lambda: None)  # the next run's top
    _pending("/attention?model=minilm&text=The+cat+sat.&head=7", version=9)
    st.session_state["attn_head"] = 5  # what the first cut-short run drew
    assert not class_drift.moved(m, "attention")
    st.session_state["attn_head"] = 6
    assert class_drift.moved(m, "attention")


def _step_drawn(lesson: str, number: int, head: int, text: str = "The cat sat.") -> None:
    """What ui/lesson_step.keep_settings keeps when it draws a step's page."""
    from ui.lesson_step import STEP_VIEW_KEY
    from ui.view_state import ViewState

    view = ViewState("attention", "minilm", text, "", {"head": head})
    st.session_state[STEP_VIEW_KEY] = (lesson, number, view)


def test_a_pending_lesson_step_is_compared_once_it_was_drawn(m):
    _pending("/lessons?lesson=heads&step=2")
    assert class_drift.moved(m, "compare")  # not the lessons page
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "lessons")  # the step's values are not known yet
    _step_drawn("heads", 2, head=5)
    assert class_drift.moved(m, "lessons")
    st.session_state["attn_head"] = 5
    assert not class_drift.moved(m, "lessons") and not class_drift.moved(m, None)


def test_leaving_the_join_page_is_not_a_move(m):
    class_drift.remember(m, "join")
    st.session_state["attn_head"] = 9
    assert not class_drift.moved(m, "lessons") and not class_drift.moved(m, None)
    class_drift.remember(m, "attention")
    assert not class_drift.moved(m, "join")  # a rerun naming the join page: nothing to leave


def _take_step(m, version: int, number: int, head: int, text: str) -> None:
    """A whole run that takes the teacher's step: its top, the step's values, its end."""
    class_drift.check(m, "lessons", lambda: None)
    _step_drawn("heads", number, head, text)
    st.session_state["attn_head"], st.session_state["sb_text"] = head, text
    m.version = version
    class_drift.remember(m, "lessons")


def test_on_a_lesson_step_a_setting_changed_is_a_move_but_a_stale_one_is_not(m):
    """A lesson step sets its own text and settings, and a browser may send an old value back
    right after the step changed it (the step before's): that is not the student's doing.
    Another value of a setting, or another page, is."""
    _take_step(m, 8, 1, head=3, text="The text of step 1.")
    _take_step(m, 9, 2, head=5, text="The text of step 2.")
    st.session_state["sb_text"] = "The text of step 1."
    st.session_state["attn_head"] = 3
    assert not class_drift.moved(m, "lessons") and not class_drift.moved(m, None)
    class_drift.remember(m, "lessons")  # the stale value stayed through a whole run
    st.session_state["attn_head"] = 5  # the step's own, as it wrote it
    assert not class_drift.moved(m, "lessons")
    st.session_state["attn_head"] = 9
    assert class_drift.moved(m, "lessons") and class_drift.moved(m, None)
    st.session_state["attn_head"] = 3
    assert class_drift.moved(m, "attention")


def test_a_value_replaced_two_views_ago_is_not_a_move_but_an_older_one_is(m):
    """Stale values are allowed from the view before the teacher's current one and the one
    before that; older ones are a student's choice again."""
    for version, head in ((8, 3), (9, 5), (10, 7)):
        _take_step(m, version, version - 7, head=head, text=f"The text of step {head}.")
    st.session_state["attn_head"] = 3
    assert not class_drift.moved(m, "lessons")
    st.session_state["attn_head"] = 7
    _take_step(m, 11, 4, head=8, text="The text of step 8.")
    st.session_state["attn_head"] = 5
    assert not class_drift.moved(m, "lessons")
    st.session_state["attn_head"] = 3
    assert class_drift.moved(m, "lessons")


def test_a_value_a_run_wrote_over_is_not_a_move_when_sent_back(m):
    """A rerun that still names the old step puts that step's values in: the values it wrote
    over (the newer step's) are the app's, when a browser sends them back."""
    _take_step(m, 8, 2, head=5, text="The text of step 2.")
    class_drift.check(m, "lessons", lambda: None)
    _step_drawn("heads", 1, 3, "The text of step 1.")
    st.session_state["attn_head"], st.session_state["sb_text"] = 3, "The text of step 1."
    class_drift.remember(m, "lessons")
    st.session_state["attn_head"], st.session_state["sb_text"] = 5, "The text of step 2."
    assert not class_drift.moved(m, "lessons")


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
