"""This browser session's place in a live class: the teacher who leads it, or a student who
joined it, and the class store they share (teaching/class_store.py).

A session holds only names and keys (a `Membership` in session state). The class itself (its
current view, members, answers) lives in the store, so a class spans every session and every
replica that opens the same store. The teacher key never reaches a student's session.

The store also remembers which class this browser is in (ui/sessions.browser_id, from
Streamlit's XSRF cookie), so a new session of the same browser (a reload, or a replica that
died and a reconnect through nginx to another) takes the class back by itself: `restore`,
called once per session from class_follow.before_run. Leaving or ending forgets it. The
teacher's role comes back that way only while the teacher's tab was seen in the last
TEACHER_AWAY_SECONDS (`still_leading`, from the teacher's class bar): a shared computer the
teacher walked away from does not lead the class; the teacher link does.

Joins are limited per client (the class store's rate limits): the client is the address the
browser connects from, or the one the operator's proxy passes on (ui/sessions.client_address).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

import streamlit as st

KEY = "_class"  # session state: this session's Membership, if it is in a class
SEEN_EVERY_SECONDS = 5.0  # a student's heartbeat (the store drops members unseen for 30 s)
TRIED_KEY = "_class_rejoin_tried"  # session state: this session asked the store once already
RETRY_KEY = "_class_rejoin_retry"  # session state: when to ask again (the store did not answer)
RETRY_SECONDS = 5.0


@dataclass
class Membership:
    """role: "teacher" or "student". A teacher holds the teacher key; a student its member
    key, whether it follows the teacher, and the class view version it last took."""

    role: str
    class_id: str
    join_code: str = ""
    teacher_key: str = ""
    member_key: str = ""
    name: str = ""
    following: bool = True
    version: int = -1  # a student: the version of the class's view this session took
    revealed: frozenset = frozenset()  # a student: the questions revealed when last looked
    published: str = ""  # a teacher: the link last given to the store
    held: str = ""  # a teacher: a link the store did not take (given at the next poll)
    ended: bool = False
    show_teacher_link: bool = False
    seen_at: float = 0.0
    sent: dict = field(default_factory=dict)  # a student: question -> choice sent
    unsent: dict = field(default_factory=dict)  # a student: answers given while out of touch
    lost: float = 0.0  # time.monotonic() when the store stopped answering; 0 while it answers
    calls: dict = field(default_factory=dict)  # store calls on their way (ui/class_calls.py)
    instead: str = ""  # a student: the model shown instead of one the teacher trained
    moved_away: bool = False  # a student: looking around because they changed their view
    rejoined_at: float = 0.0  # time.monotonic() when it came back by itself (a reload, a
    # replica that died); 0 when it joined or started here

    @property
    def teacher(self) -> bool:
        return self.role == "teacher"


def store():
    """The class store of this process (SQLite by default, Redis when configured)."""
    from teaching.class_store import open_store

    return open_store()


def current() -> Membership | None:
    return st.session_state.get(KEY)


def teacher() -> Membership | None:
    """This session's class, when it leads one."""
    m = current()
    return m if m is not None and m.teacher else None


def student() -> Membership | None:
    """This session's class, when it joined one as a student."""
    m = current()
    return m if m is not None and not m.teacher else None


def shown_code(code: str) -> str:
    """A join code as people read it: ABC-DEF."""
    plain = re.sub(r"[^A-Za-z0-9]", "", code or "").upper()
    return f"{plain[:3]}-{plain[3:]}" if len(plain) == 6 else plain


def start() -> Membership:
    """Start a class led by this session."""
    new = store().start_class()
    m = Membership("teacher", new.class_id, join_code=new.join_code,
                   teacher_key=new.teacher_key)
    st.session_state[KEY] = m
    _remember(lambda s, browser: s.remember_teacher(new.teacher_key, browser))
    return m


def lead(teacher_key: str) -> Membership | None:
    """Lead the class this teacher key belongs to (the teacher link); None if there is none."""
    s = store()
    class_id = s.teacher_class(teacher_key)
    if class_id is None:
        return None
    code = s.join_code(teacher_key)  # shown again on this machine's projector
    m = Membership("teacher", class_id, join_code=code or "", teacher_key=teacher_key)
    st.session_state[KEY] = m
    _remember(lambda s, browser: s.remember_teacher(teacher_key, browser))
    return m


def end() -> None:
    """End the class this session leads (its students are told), and leave it."""
    m = teacher()
    if m is None:
        return
    from teaching.class_store import NotTeacher

    try:  # a store out of reach raises StoreDown: still leading, the Teach page says so
        store().end_class(m.teacher_key)
    except NotTeacher:  # ended or expired already
        pass
    st.session_state.pop(KEY, None)
    _remember(lambda s, browser: s.forget(browser))


def join(code: str, name: str = "") -> Membership:
    """Join the class with this code (ClassError with a message for the screen)."""
    from server import sessions

    # the store says why not: no such class, full, too many tries from this client
    member = store().join(code, name, client=sessions.client_address() or "")
    class_id = member.class_id
    m = Membership("student", class_id, join_code=shown_code(code),
                   member_key=member.member_key, name=member.name)
    st.session_state[KEY] = m
    _remember(lambda s, browser: s.remember(class_id, browser, member.member_key))
    return m


def leave() -> None:
    """Leave the class (a student): the store drops the member, so its place is free."""
    m = student()
    if m is not None:
        try:
            store().leave(m.class_id, m.member_key)
        except ValueError:  # ClassError: the class may be gone already
            pass
    st.session_state.pop(KEY, None)
    st.session_state[TRIED_KEY] = True  # a student who left is never pulled back
    _remember(lambda s, browser: s.forget(browser))


# ------------------------------------------------------------------ coming back by itself
def this_browser() -> str | None:
    """This browser's id across sessions and replicas (ui/sessions.browser_id: a hash of the
    token in Streamlit's XSRF cookie); None without that cookie (then nothing is remembered)."""
    from server import sessions

    found = sessions.browser_id()
    return found if found.startswith("browser-") else None


def _remember(change) -> None:
    """change(store, browser): keep (or forget) where this browser is. Best effort: a store
    that cannot be reached now only means no automatic rejoin later."""
    browser = this_browser()
    if browser is None:
        return
    try:
        change(store(), browser)
    except Exception:  # noqa: BLE001 - the class itself works without it
        pass


def still_leading(m: Membership, now: float | None = None) -> None:
    """The teacher's class bar: tell the store, at most every SEEN_EVERY_SECONDS, that this
    browser's teacher tab is here, so a reload of it leads again (class_store_rejoin.py)."""
    now = time.monotonic() if now is None else now
    if not m.teacher or m.ended or now - m.seen_at < SEEN_EVERY_SECONDS:
        return
    m.seen_at = now
    _remember(lambda s, browser: s.remember_teacher(m.teacher_key, browser))


def restore(browser: str | None) -> Membership | None:
    """A session in no class yet: the class this browser was in, taken back (once per session,
    one store call when there is none; again at a later run, at most every RETRY_SECONDS,
    while the store cannot be reached). A student comes back as they left: following the
    teacher or looking around, under the name they joined with, with the answers they gave."""
    state = st.session_state
    if current() is not None or state.get(TRIED_KEY) or not browser or \
            time.monotonic() < state.get(RETRY_KEY, 0.0):
        return None
    from teaching.class_store import ClassError, StoreDown

    s = store()
    try:
        back = s.recall(browser)
        if back is None:
            m = None
        elif back.teacher:
            m = Membership("teacher", back.class_id, join_code=s.join_code(back.teacher_key)
                           or "", teacher_key=back.teacher_key,
                           rejoined_at=time.monotonic())
        else:
            s.seen(back.class_id, back.member_key)  # present again, as it was: following or not
            m = Membership("student", back.class_id, member_key=back.member_key,
                           name=back.name, following=back.following,
                           sent=s.answers_of(back.class_id, back.member_key),
                           rejoined_at=time.monotonic())
    except ClassError as exc:  # the class just ended (ClassNotFound), or an outage
        if isinstance(exc, StoreDown):
            state[RETRY_KEY] = time.monotonic() + RETRY_SECONDS
            return None
        m = None
    except Exception:  # noqa: BLE001 - the store's client failed: as an outage
        state[RETRY_KEY] = time.monotonic() + RETRY_SECONDS
        return None
    state[TRIED_KEY] = True
    if m is not None:
        state[KEY] = m
    return m


def server_address(page: str) -> str:
    """The server's address as this browser reached it ("" when the browser did not say):
    the page's URL without its page path and query."""
    url = ""
    try:
        url = st.context.url or ""
    except Exception:  # no browser (bare mode)
        url = ""
    if not isinstance(url, str) or "://" not in url:
        return ""
    base = url.split("?")[0].split("#")[0].rstrip("/")
    for path in (page, "start"):
        if path and base.endswith("/" + path):
            return base[: -len(path) - 1]
    return base


def join_link(code: str, base: str = "") -> str:
    return f"{base}/join?{urlencode({'code': shown_code(code)})}"


def teacher_link(teacher_key: str, base: str = "") -> str:
    return f"{base}/teach?{urlencode({'class': teacher_key})}"
