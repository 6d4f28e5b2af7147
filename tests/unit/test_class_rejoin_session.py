"""A new session of a browser that was in a class takes the class back by itself
(ui/class_session.restore, given the browser's id as server/sessions.browser_id gives it): a
student comes back following or looking around, as they left, under their own name; the
teacher leads again; a student who left stays out; and a session without a browser id (no
XSRF cookie) remembers nothing."""

from __future__ import annotations

import pytest
import streamlit as st

from teaching.class_store import open_store
from server import sessions
from ui import class_session

BROWSER = sessions.browser_key("2|00000000|0123456789abcdef|1700000000")


@pytest.fixture
def store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'classes.sqlite'}"
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", url)
    monkeypatch.setattr(sessions, "browser_id", lambda: BROWSER)
    st.session_state.clear()
    yield open_store(url)
    st.session_state.clear()


def new_session() -> None:
    """The same browser, a new session (a reload, or another replica after one died)."""
    st.session_state.clear()


def test_a_student_comes_back_as_they_left_looking_around_with_their_name(store):
    new = store.start_class()
    joined = class_session.join(new.join_code, "Ada")
    store.set_following(new.class_id, joined.member_key, False)  # was looking around
    new_session()
    back = class_session.restore(class_session.this_browser())
    assert back is not None and not back.teacher and back.rejoined_at > 0
    assert (back.class_id, back.member_key) == (new.class_id, joined.member_key)
    assert not back.following and back.name == "Ada" and class_session.current() is back
    count = store.headcount(new.teacher_key)
    assert (count.members, count.following, count.looking_around) == (1, 0, 1)
    assert class_session.restore(BROWSER) is None  # once per session


def test_a_following_student_comes_back_following_under_the_name_the_store_gave(store):
    new = store.start_class()
    joined = class_session.join(new.join_code)  # no name: the store gives one
    assert joined.name.startswith("Student")
    new_session()
    back = class_session.restore(BROWSER)
    assert back.following and back.name == joined.name
    count = store.headcount(new.teacher_key)
    assert (count.members, count.following) == (1, 1)


def test_the_teacher_comes_back_leading_only_in_the_same_browser(store, monkeypatch):
    led = class_session.start()
    new_session()
    back = class_session.restore(BROWSER)
    assert back.teacher and back.teacher_key == led.teacher_key
    assert back.join_code == led.join_code
    new_session()
    assert class_session.restore(sessions.browser_key("2|00|ff|1")) is None  # another browser


def test_a_student_who_left_is_not_pulled_back(store):
    new = store.start_class()
    class_session.join(new.join_code)
    class_session.leave()
    assert class_session.restore(BROWSER) is None  # not in this session ...
    new_session()
    assert class_session.restore(BROWSER) is None  # ... nor in a later one


def test_an_ended_class_is_not_taken_back(store):
    led = class_session.start()
    new_session()
    new = store.teacher_class(led.teacher_key)
    assert new is not None
    class_session.join(store.join_code(led.teacher_key))
    store.end_class(led.teacher_key)
    new_session()
    assert class_session.restore(BROWSER) is None


def test_without_a_browser_id_nothing_is_remembered(store, monkeypatch):
    monkeypatch.setattr(sessions, "browser_id", lambda: "session-1234")  # no XSRF cookie
    assert class_session.this_browser() is None
    new = store.start_class()
    class_session.join(new.join_code)
    new_session()
    assert class_session.restore(class_session.this_browser()) is None
    assert store.recall("session-1234") is None


def test_a_teacher_back_by_itself_does_not_push_the_page_it_landed_on(store, monkeypatch):
    from ui import class_follow

    led = class_session.start()
    store.set_view(led.teacher_key, "/heads?model=minilm")
    new_session()
    back = class_session.restore(BROWSER)
    links = iter(["/start", "/attention?model=minilm"])
    monkeypatch.setattr(class_follow, "view_link", lambda page: next(links))
    assert class_follow.publish("start") is False  # a new tab on the start page: kept quiet
    assert store.view(back.class_id).link == "/heads?model=minilm"
    assert class_follow.publish("attention") is True  # the teacher's next change is shown
    assert store.view(back.class_id).link == "/attention?model=minilm"


class MovedClock:
    """The store's clock, moved by the test (the store is the process's, opened once)."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_reloaded_teacher_tab_leads_again_and_a_browser_back_much_later_does_not(
        store, monkeypatch):
    from teaching.class_store import TEACHER_AWAY_SECONDS

    clock = MovedClock(store.clock())
    monkeypatch.setattr(store, "clock", clock)
    led = class_session.start()
    for tick in range(1, 30):  # the teacher's bar says so every few seconds, for half an hour
        clock.now += 5
        class_session.still_leading(led, now=tick * 10.0)
    new_session()  # a reload of the teacher's own tab
    back = class_session.restore(BROWSER)
    assert back is not None and back.teacher and back.teacher_key == led.teacher_key
    class_session.still_leading(back, now=1e6)
    clock.now += TEACHER_AWAY_SECONDS + 1  # the tab closed; later the same browser opens the app
    new_session()
    assert class_session.restore(BROWSER) is None and class_session.current() is None
    new_session()
    assert class_session.restore(BROWSER) is None  # nor later
    again = class_session.lead(led.teacher_key)  # only the teacher link leads it now
    assert again is not None and again.teacher and again.class_id == led.class_id


def test_a_student_who_leaves_frees_the_place_in_the_class(store):
    new = store.start_class()
    joined = class_session.join(new.join_code, "Ada")
    store.seen(new.class_id, joined.member_key)
    assert store.headcount(new.teacher_key).members == 1
    class_session.leave()
    assert store.headcount(new.teacher_key).members == 0
    assert store.tally(new.teacher_key, "q").answered == 0


def test_a_client_flooding_wrong_codes_does_not_stop_another_from_joining(store, monkeypatch):
    from teaching.class_store import FAILED_CODES_PER_WINDOW, ClassError

    new = store.start_class()
    monkeypatch.setattr(sessions, "client_address", lambda: "203.0.113.66")
    refused = 0
    for n in range(FAILED_CODES_PER_WINDOW + 20):
        try:
            class_session.join(f"ZZZ-{n:03d}".replace("0", "Z").replace("1", "Y"))
        except ClassError as exc:
            refused += "Too many wrong codes" in str(exc)
    assert refused >= 20
    monkeypatch.setattr(sessions, "client_address", lambda: "198.51.100.7")
    assert class_session.join(new.join_code, "Bo").class_id == new.class_id


def test_the_client_is_the_address_the_operators_proxy_passes_on(monkeypatch):
    class Context:
        ip_address = None  # nginx on this machine: a local connection
        headers = {}

    class Headers(dict):
        def get_all(self, key):
            return [v for k, v in self.items() if k.lower() == key.lower()]

    context = Context()
    monkeypatch.setattr(st, "context", context)
    monkeypatch.delenv("ATTENTION_LAB_CLIENT_HEADER", raising=False)
    context.headers = Headers({"X-Forwarded-For": "6.6.6.6, 192.0.2.9"})
    assert sessions.client_address() is None  # no proxy named: a browser's header is not trusted
    monkeypatch.setenv("ATTENTION_LAB_CLIENT_HEADER", "x-forwarded-for")
    assert sessions.client_address() == "192.0.2.9"  # the address the proxy added, last
    monkeypatch.setenv("ATTENTION_LAB_CLIENT_HEADER", "X-Real-IP")
    context.headers, context.ip_address = Headers({"X-Real-IP": "192.0.2.10"}), "127.0.0.1"
    assert sessions.client_address() == "192.0.2.10"
    context.headers = Headers()  # the header missing: the connection's own address
    assert sessions.client_address() == "127.0.0.1"
