"""Follow the teacher: the teacher's app publishes its view, a following student's app takes it.

The teacher's session gives the store its current view (ui/view_state.current → a link) at the
end of each run and from its class bar's poll (a slider inside a page's fragment changes the
view without a whole run), only when the link changed. A student's class bar polls the store
twice a second: a read of the class's view (version, link, revealed questions) and, every few
seconds, a heartbeat. When the version moved and the student follows, it reruns the app, and
`before_run` (at the top of app.py, before the jump is taken) opens that view.

The poll does no model work of its own, so it never waits in the run queue (ui/gate.py): a
fragment's rerun does not pass app.py's slot, and only a cache miss (ui/cache.turn_to_compute)
takes one. The poll that first sees a new view on this replica warms it once
(ui/class_warm.py: its page's modules, its runs in the shared cache, through the run queue and
the memory budget), so the other students' reruns find it ready. The run the poll starts when
the view changed waits its turn in the queue, as any run does.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import streamlit as st

from teaching.pages import BY_PATH

from . import class_calls, class_drift, class_models, class_session, class_warm, view_state
from .class_session import Membership

STUDENT_POLL_SECONDS = 0.5
TEACHER_POLL_SECONDS = 0.5  # it also publishes a change made inside a page's fragment
PAGE_KEY = "_class_page"  # the page on screen (for the teacher's poll, which runs alone)
# (page script hash, address query) of PAGE_KEY's page: a poll from another page is stale
ADDRESS_KEY = "_class_address"
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


def _run_context():
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return get_script_run_ctx()


def in_fragment_rerun() -> bool:
    """True while a fragment reruns on its own (not inside a whole run of the app)."""
    ctx = _run_context()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def back_from_a_left_page() -> None:
    """In a class bar's poll: a poll the browser sent from a page the app had just left (it
    was on its way when the run that switched pages began, as when a student's app takes the
    teacher's view on another page). Streamlit runs it on that old page, and the browser,
    already on the new one, then clears its whole screen for it. Open the page the last whole
    run drew again, with its address: a whole run (raises), which draws it all again."""
    ctx, drawn = _run_context(), st.session_state.get(ADDRESS_KEY)
    if ctx is None or drawn is None or ctx.page_script_hash == drawn[0]:
        return
    from .page_registry import switch_to

    switch_to(st.session_state[PAGE_KEY], query_params=drawn[1])


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
    if class_session.current() is not None:
        st.session_state[PAGE_KEY] = page
        ctx = _run_context()
        if ctx is not None:
            st.session_state[ADDRESS_KEY] = (ctx.page_script_hash, st.query_params.to_dict())
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
    if class_session.current() is None and not st.session_state.get(class_session.TRIED_KEY):
        class_session.restore(class_session.this_browser())
    m = class_session.student()
    if m is None or not m.following or m.ended or class_drift.check(m, on_screen, look_around):
        return  # (a student who moved on their own now looks around: ui/class_drift.py)
    if m.lost:  # out of touch: this run keeps the view it has (the bar's poll reads again)
        return
    view = read_view(m)
    if view is None:  # the class is over (then m.ended), or the store is out of touch
        return
    m.revealed = frozenset(view.revealed)
    if view.ended:
        m.ended = True
        return
    if view.version == m.version:
        return
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


def poll(m: Membership) -> bool:
    """A student's poll: True when the app must run again (the view moved while following,
    a question was revealed, the class ended, or answers given while out of touch are in)."""
    heartbeat(m)
    had_unsent = bool(m.lost and m.unsent)
    view = read_view(m)
    if m.ended:
        return True
    if view is None:
        return False
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
