"""A browser that was in a class, in a new AppTest session (a reload, another replica): it is
back in the class by itself, until the student leaves; then a new session stays out. AppTest
sends no cookie, so the browser's id (server/sessions.browser_id) is given here."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import APP, page_text, switch  # noqa: E402
from test_live_class import store as class_store  # noqa: E402, F401  (a fixture)

pytestmark = pytest.mark.app


@pytest.fixture
def store(class_store, monkeypatch):
    """The class test's fresh SQLite store, with this browser's id given."""
    from server import sessions

    monkeypatch.setattr(sessions, "browser_id", lambda: "browser-apptest-rejoin")
    return class_store


def on_join_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()
    switch(at, "join").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_back_in_the_class_in_a_new_session_until_the_student_leaves(store):
    new = store.start_class()
    first = on_join_page()
    first.text_input(key="class_code").input(new.join_code)
    first.button(key="class_join").click().run()
    joined = first.session_state["_class"]

    again = on_join_page()  # the same browser, a new session: no code typed
    back = again.session_state["_class"]
    assert (back.class_id, back.member_key) == (new.class_id, joined.member_key)
    assert "Back in the class" in page_text(again, ("markdown",))
    assert "You are in the class" in page_text(again, ("markdown", "success"))
    again.button(key="class_leave").click().run()
    assert "_class" not in again.session_state

    after = on_join_page()  # left on purpose: a new session is not pulled back
    assert "_class" not in after.session_state
    assert after.button(key="class_join") is not None


def test_a_student_looking_around_comes_back_looking_around_under_their_name(store):
    new = store.start_class()
    first = on_join_page()
    first.text_input(key="class_code").input(new.join_code)
    first.text_input(key="class_name").input("Ann <b>B</b>")
    first.button(key="class_join").click().run()
    first.button(key="class_look").click().run()
    assert "Looking around on your own" in page_text(first, ("markdown",))

    again = on_join_page()  # the same browser, a new session
    back = again.session_state["_class"]
    assert not back.following
    assert "Looking around on your own" in page_text(again, ("markdown",))
    assert "Following the teacher" not in page_text(again, ("markdown",))
    assert [t.value for t in again.text] == ["Ann <b>B</b>"]  # plain text, as at the join
    count = store.headcount(new.teacher_key)
    assert (count.following, count.looking_around) == (0, 1)
