"""Follow the teacher: the teacher's app publishes its view, a following student's app takes it.

The teacher's session gives the store its current view (ui/view_state.current → a link) at the
end of each whole run and at the end of a page's fragment run alone (`after_fragment`: a slider
inside a page's fragment changes the view without a whole run), only when the link changed.
A student's browser asks the class's signal twice a second (ui/class_signal.py: a light route,
no Streamlit run; it also counts the student as seen lately) and, when the version moved while
the student follows, a question was revealed, the class ended or the store was lost or came
back, reruns the class bar: it reads the class's view (`poll`, which warms it on this replica),
then reruns the whole app, and `before_run` (at the top of app.py, before the jump is taken)
opens that view.

Nothing here does model work of its own, so it never waits in the run queue (ui/gate.py). The
first student run on this replica that hears of a new view warms it once (ui/class_warm.py:
its page's modules, its runs in the shared cache, through the run queue and the memory
budget), so the other students' runs find it ready.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import streamlit as st

from teaching.pages import BY_PATH

from . import class_calls, class_drift, class_models, class_session, class_warm, view_state
from .class_session import Membership

PAGE_KEY = "_class_page"  # the page on screen (for a fragment's run alone)
WHOLE_RUN_KEY = "_class_whole_run"  # a whole run began and has not finished
READ_KEY = "_class_read"  # (when, the class's view) as `heard` read it
DUE_KEY = "_class_due"  # the student's signal heard something: the bar looks
NOT_FOLLOWED = class_drift.UNFOLLOWED  # the teacher's own pages: students stay where they are
ERROR_KEY = "_class_error"  # a message from the store, shown once in the bar
TAKING_KEY = class_drift.TAKING_KEY  # (class view version, runs that began taking it)
TAKES = 4  # a student's app reruns into a view at most this often until one run finishes
LOST_TOUCH = "Lost touch with the class — trying again"


def _store_error(problem: object) -> None:
    st.session_state[ERROR_KEY] = str(problem)


# ------------------------------------------------------------------------ outages
# The store not answering (StoreDown, or anything else a call raises that is not the class's
# own answer) is an interruption: the session keeps its class, its view and its answers, says
# LOST_TOUCH in its bar, and the next poll that reaches the store picks up from there. Only
# ClassNotFound (a student's class ended or expired) and NotTeacher (the teacher's) end it.
def lost_touch(m: Membership) -> None:
    if not m.lost:
        m.lost = time.monotonic()


def in_touch(m: Membership) -> None:
    """The store answered again: answers given meanwhile are sent now."""
    if not m.lost:
        return
    m.lost = 0.0
    m.seen_at = 0.0  # present again at once (the headcount counts members seen lately)
    store = class_session.store()
    for question, choice in list(m.unsent.items()):
        try:
            if store.answer(m.class_id, m.member_key, question, choice):
                m.sent[question] = choice
            m.unsent.pop(question, None)
        except Exception:  # noqa: BLE001 - gone again: the next poll tries again
            lost_touch(m)
            return


# ------------------------------------------------------------------------ the teacher
def view_link(page: str) -> str | None:
    """The teacher's view of `page` as the class follows it; None for the teacher's own pages.
    A lesson step is its lesson link (a student gets the step's words and question too), with
    the settings the teacher changed in the step's figure (lesson_step.changed_settings),
    except an uploaded lesson, which only this browser has: then the page the step opens.
    A concept check is the check without a question: each student answers at their own pace."""
    if page not in BY_PATH or page in NOT_FOLLOWED:
        return None
    if page != "lessons":
        return class_models.shared_link(view_state.current(page))  # a model trained here: said
    from .lesson_step import AT_KEY

    if st.query_params.get("check") in ("before", "after"):
        return f"/lessons?{urlencode({'check': st.query_params['check']})}"
    at = st.session_state.get(AT_KEY)
    if not at or "lesson" not in st.query_params:
        return "/lessons"
    lesson_id, number = at
    from .lesson_library import UPLOADS_KEY

    uploaded = st.session_state.get(UPLOADS_KEY, {}).get(lesson_id)
    if uploaded is not None and 1 <= number <= len(uploaded.steps):
        return class_models.shared_link(view_state.current(uploaded.steps[number - 1].page))
    from .lesson_step import changed_settings  # a setting the teacher moved in the step

    moved = changed_settings(lesson_id, number)
    return f"/lessons?{urlencode({'lesson': lesson_id, 'step': number, **moved})}"


def publish(page: str | None = None) -> bool:
    """The teacher's session: give the store this view if it changed. True when it did. One
    view is on its way at a time (ui/class_calls.py): one the store has not answered yet is
    taken by a later call (the teacher's poll), and the newest view is given after it."""
    m = class_session.teacher()
    if m is None or m.ended:
        return False
    page = page or st.session_state.get(PAGE_KEY)
    link = view_link(page) if page else None
    on_its_way = m.calls.get("publish")
    if on_its_way is not None:
        if not on_its_way.done():
            m.held = link if link and link != m.published else m.held
            return False
        del m.calls["publish"]
        _given(m, on_its_way)
    if link is None or link == m.published:
        return False
    if m.rejoined_at and not m.published:  # a teacher's session that came back by itself (a
        m.published = link  # reconnect, or a new tab): its first page is not pushed to the
        return False  # class; the teacher's next change is
    sending = class_calls.start(m, "publish", class_session.store().set_view, m.teacher_key,
                                link)
    sending.link = link
    if not class_calls.answered(sending):
        m.held = link
        lost_touch(m)
        return False
    del m.calls["publish"]
    return _given(m, sending)


def _given(m: Membership, sent) -> bool:
    """What became of a view given to the store (a finished call of `publish`)."""
    from teaching.class_store import ClassError, NotTeacher, StoreDown

    try:
        sent.result()
    except NotTeacher:
        m.ended = True
        return False
    except ClassError as exc:
        if not isinstance(exc, StoreDown):  # e.g. a view too long to share: said once, not
            _store_error(exc)  # retried
            m.published = sent.link
            return False
        m.held = sent.link  # out of touch until it is given: reads alone do not end this
        lost_touch(m)  # outage (an SQLite file locked still reads)
        return False
    except Exception:  # noqa: BLE001 - the store's client failed: as StoreDown
        m.held = sent.link
        lost_touch(m)
        return False
    m.published, m.held = sent.link, ""
    in_touch(m)
    class_warm.warm(sent.link)  # this replica: the step after a lesson step, before "Next"
    return True


def after_run(page: str) -> None:
    """app.py, at the end of a whole run: the page on screen, published if it is a teacher's;
    a student's view taken (its version counts as taken only now, see `before_run`)."""
    st.session_state[WHOLE_RUN_KEY] = False
    if class_session.current() is not None:
        st.session_state[PAGE_KEY] = page
        publish(page)
        m = class_session.student()
        taking = st.session_state.pop(TAKING_KEY, None)
        if m is not None and taking is not None:
            m.version = max(m.version, taking[0])
        class_drift.remember(m, page)


# ------------------------------------------------------------------------ the student
def before_run(page_objects: dict, on_screen: str) -> None:
    """app.py, before the jump is taken: a following student's session opens the class's
    view when it moved on since this session last took it. A session in no class yet first
    takes back the class its browser was in (once per session: class_session.restore)."""
    st.session_state[WHOLE_RUN_KEY] = True
    st.session_state.pop(DUE_KEY, None)  # this run takes what the bar's signal heard
    if class_session.current() is None and not st.session_state.get(class_session.TRIED_KEY):
        class_session.restore(class_session.this_browser())
    m = class_session.student()
    if m is None or not m.following or m.ended or class_drift.check(m, on_screen, look_around):
        return  # (a student who moved on their own now looks around: ui/class_drift.py)
    if m.lost:  # out of touch: this run keeps the view it has (its signal says when back)
        return
    read = st.session_state.pop(READ_KEY, None)  # `heard` read it just now, in this run
    view = read[1] if read and time.monotonic() - read[0] < 1.0 else read_view(m)
    if view is None:  # the class is over (then m.ended), or the store is out of touch
        return
    m.revealed = frozenset(view.revealed)
    if view.ended:
        m.ended = True
        return
    if view.version == m.version and on_screen not in NOT_FOLLOWED:
        return  # (on the join page with the view taken: a rerun the browser asked for from
        # the page it had just left, as the teacher's view opened; the view opens again)
    # The version counts as taken when this run (or the one a page switch starts) finishes
    # (`after_run`): a run that never finishes (a new request cut it short) would otherwise
    # leave the student on the old view with nothing to tell the poll. Bounded by TAKES.
    version, runs = st.session_state.get(TAKING_KEY, (None, 0))
    runs = runs + 1 if version == view.version else 1
    st.session_state[TAKING_KEY] = (view.version, runs)
    if runs >= TAKES:
        m.version = view.version
    if view.link:
        class_drift.taking(view.version, view.link)  # what it sets: told from a student's move
        take_link(view.link, page_objects, on_screen)


def take_link(link: str, page_objects: dict, on_screen: str) -> None:
    """Open the view a class link names: a page with its settings, or a lesson step."""
    page, params = view_state.ViewState.split_link(link)
    if page not in BY_PATH or page in NOT_FOLLOWED:
        return
    params = class_models.openable(params, class_session.student())  # not the teacher's own
    if page == "lessons":
        from .lesson_step import AT_KEY

        wanted = params  # the lesson, the step and any setting the teacher changed in it
        if on_screen == "lessons":
            st.session_state.pop(AT_KEY, None)  # the step's state is put in again
            st.query_params.from_dict(wanted)
            return
        st.session_state.pop(AT_KEY, None)
        st.switch_page(page_objects["lessons"], query_params=wanted)  # raises: a new run
        return
    view_state.open_view(view_state.ViewState.from_link(page, params))


def look_around() -> None:
    _set_following(False)


def follow_again() -> None:
    _set_following(True)


def _set_following(following: bool) -> None:
    m = class_session.student()
    if m is None:
        return
    from teaching.class_store import ClassError, StoreDown

    try:
        class_session.store().set_following(m.class_id, m.member_key, following)
    except StoreDown:  # this screen follows or not as asked; the headcount catches up later
        lost_touch(m)
    except ClassError as exc:
        _store_error(exc)
    m.following = following
    if following:
        m.version = -1  # take the teacher's view again, even if it did not move


def heartbeat(m: Membership, now: float | None = None) -> None:
    """Tell the store this student is still here (at most every SEEN_EVERY_SECONDS), without
    waiting for it (ui/class_calls.py; a gone member or class: the view read says so)."""
    now = time.monotonic() if now is None else now
    if now - m.seen_at < class_session.SEEN_EVERY_SECONDS:
        return
    m.seen_at = now
    class_calls.send(m, "seen", class_session.store().seen, m.class_id, m.member_key)


def read_view(m: Membership):
    """The class's view for a student; None when the class is over (m.ended is set) or the
    store has not answered (m.lost is set: an outage, never the class's end). It waits for the
    store at most class_calls.WAIT_SECONDS; a read still on its way is taken by the next."""
    from teaching.class_store import ClassNotFound

    try:
        view = class_calls.call(m, "view", class_session.store().view, m.class_id)
    except ClassNotFound:  # ended and gone, or expired
        m.ended = True
        return None
    except Exception:  # noqa: BLE001 - StoreDown, Pending, or the store's client failing
        lost_touch(m)
        return None
    in_touch(m)
    if view.ended:
        m.ended = True
    return view


def after_fragment() -> None:
    """At the end of a page's fragment (st.fragment): when it ran alone, a teacher's view goes
    to the class, and a following student who moved a setting in it now looks around (the
    whole app reruns, so the bar says so). Inside a whole run `after_run` does both."""
    if st.session_state.get(WHOLE_RUN_KEY) or PAGE_KEY not in st.session_state:
        return
    m = class_session.current()
    if m is None:
        return
    if m.teacher:
        publish()
    elif class_drift.check(m, None, look_around):
        st.rerun(scope="app")


def heard() -> None:
    """A student's browser heard the class's signal differ from its screen (a widget callback,
    before the bar's rerun it starts, ui/class_signal.watch): the bar looks (`poll`), in its
    own run, which may draw (a first model load's progress)."""
    st.session_state[DUE_KEY] = True


def poll(m: Membership) -> bool:
    """A student's look at the class: True when the app must run again (the view moved while
    following, a question was revealed, the class ended, or answers given while out of touch
    are in)."""
    heartbeat(m)
    had_unsent = bool(m.lost and m.unsent)
    view = read_view(m)
    if m.ended:
        return True
    if view is None:
        return False
    st.session_state[READ_KEY] = (time.monotonic(), view)  # before_run, in the run it starts
    class_warm.warm_first_poll()
    if m.following and view.version != m.version:
        class_warm.warm(view.link)  # once on this replica, before the students' reruns
    revealed = frozenset(view.revealed)
    if revealed != m.revealed:
        m.revealed = revealed
        return True
    if had_unsent and not m.unsent:
        return True
    return m.following and view.version != m.version
