"""The class bar at the top of every page of a session in a live class.

A student sees whether the screen follows the teacher, with one button to look around on their
own and one to follow again; the teacher sees how many follow, how many look around and how
many have joined. Neither bar reruns on a timer: the browser asks the class's signal
(ui/class_signal.py) and only when it heard something the screen does not show yet does a
student's app rerun (ui/class_follow.heard) or the teacher's bar (a fragment) redraw (an
outage, the class's end; the headcount the browser writes into the bar's line itself)."""

from __future__ import annotations

import time

import streamlit as st

from . import class_calls, class_follow, class_models, class_session, class_signal
from .class_follow import ERROR_KEY
from .text import md_escape

REJOINED_SHOWN_SECONDS = 20.0  # "Back in the class" stays this long after a rejoin


def draw() -> None:
    """Draw this session's class bar (nothing when it is in no class)."""
    m = class_session.current()
    if m is None:
        return
    if m.teacher:
        _teacher_bar()
    else:
        _student_bar()


def back(m) -> str:
    """ "Back in the class" for a while after this session came back to it by itself."""
    fresh = m.rejoined_at and time.monotonic() - m.rejoined_at < REJOINED_SHOWN_SECONDS
    return "**Back in the class** (your screen reconnected). " if fresh else ""


def headcount_said(members: int, following: int, looking_around: int) -> str:
    return (f"{following} following · {looking_around} looking around · "
            f"{members} joined")


HEARD_KEY = "_class_heard"  # session state: the teacher's browser heard a change


def _teacher_heard() -> None:
    st.session_state[HEARD_KEY] = True


@st.fragment
def _teacher_bar() -> None:
    m = class_session.teacher()
    if m is None:
        return
    class_session.still_leading(m)  # a reload of this tab leads again; a browser gone long not
    if st.session_state.pop(HEARD_KEY, False):  # (class_signal's route says the tab is here)
        class_follow.publish()  # a view the store did not take yet, given now
    from teaching.class_store import NotTeacher

    problem = st.session_state.pop(ERROR_KEY, None)
    if problem:
        st.error(problem)
    count = None
    if not m.ended:
        try:
            count = class_calls.call(m, "headcount", class_session.store().headcount,
                                     m.teacher_key)
            if not m.held:  # (a view not given yet: still out of touch, as under a lock)
                class_follow.in_touch(m)
        except NotTeacher:
            m.ended = True
        except Exception:  # noqa: BLE001 - StoreDown, Pending, the store's client: an outage
            class_follow.lost_touch(m)
    counted = {k: getattr(count, k, None) for k in ("members", "following", "looking_around")}
    class_signal.watch(m, {"lost": bool(m.lost), "ended": m.ended, **counted}, _teacher_heard)
    if m.lost and not m.ended:
        lost_line()
        return
    if m.ended:
        st.warning("Your class has ended or expired: students no longer follow this screen. "
                   "Start a new one on the Teach page.")
        return
    code = class_session.shown_code(m.join_code)
    where = f"Class **{md_escape(code)}** · " if code else "Your class · "
    st.container(key="class_headcount").markdown(  # its counts kept fresh by class_signal
        ":material/co_present: " + back(m) + where
        + headcount_said(count.members, count.following, count.looking_around))


def _student_watch(m) -> None:
    """The student's signal, inside the bar's fragment: what it hears reruns the bar, which
    never cuts a whole run short (Streamlit queues it), and the bar the whole app when due."""
    taking = st.session_state.get(class_follow.TAKING_KEY)  # this run opens that view
    class_signal.watch(m, {"lost": bool(m.lost), "ended": m.ended, "following": m.following,
                           "version": max(m.version, taking[0] if taking else -1),
                           "revealed": sorted(m.revealed)}, class_follow.heard)


@st.fragment
def _student_bar() -> None:
    m = class_session.student()
    if m is None:
        return
    if st.session_state.pop(class_follow.DUE_KEY, False) and class_follow.poll(m):
        st.rerun()  # the whole app: the teacher's view, a reveal, the class's end
    _student_watch(m)
    problem = st.session_state.pop(ERROR_KEY, None)
    if problem:
        st.error(problem)
    if m.ended:
        st.warning("The class has ended. You can keep exploring the app on your own.")
        st.button("Leave the class", key="class_leave_bar", on_click=class_session.leave)
        return
    if m.lost:
        lost_line()
        return
    words, button = st.columns([4, 1], vertical_alignment="center")
    if m.following:
        words.markdown(":material/co_present: " + back(m) + "**Following the teacher**: "
                       "your screen shows what the teacher shows. If you change something "
                       "yourself, you look around on your own.")
        button.button("Look around", key="class_look", icon=":material/explore:",
                      on_click=class_follow.look_around, width="stretch",
                      help="Explore on your own. Come back to the teacher's screen with "
                      "“Follow again”.")
        if m.instead:
            st.info(class_models.sentence(m.instead), icon=":material/info:")
        return
    why = " You changed the view yourself, so" if m.moved_away else ""
    words.markdown(":material/explore: " + back(m) + "**Looking around on your own.**" + why
                   + (" the" if why else " The") + " teacher's screen goes on without you.")
    if button.button("Follow again", key="class_follow", type="primary",
                     icon=":material/co_present:", width="stretch"):
        m.moved_away = False
        class_follow.follow_again()
        st.rerun()  # the whole app, which opens the teacher's view


def lost_line() -> None:
    """The one line a class member sees while the class's store does not answer."""
    st.info(class_follow.LOST_TOUCH, icon=":material/sync_problem:")


def follows_teacher() -> bool:
    """Is this session a student who follows the teacher now?"""
    m = class_session.student()
    return m is not None and m.following and not m.ended


def following_line() -> None:
    """Where a page has its own way to move on (a lesson's Previous and Next), a student who
    follows the teacher gets one line saying the teacher moves on ("Look around" is the bar's
    button, above it: one such button on the screen)."""
    st.container(key="class_line").markdown(
        ":material/co_present: **Your teacher moves the class from step to step.** To move "
        "through the lesson on your own, press “Look around” at the top.")
