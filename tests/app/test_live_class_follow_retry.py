"""A student's app takes the class's view only when a run that took it finishes: a run cut
short (a new request, a stop) leaves the version untaken, so the next poll reruns into it
again, a bounded number of times (ui/class_follow.TAKES)."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

pytestmark = pytest.mark.app


def _student_run(class_id: str, member_key: str) -> None:
    """A student's whole run: it takes the class's view, then finishes or is cut short."""
    import streamlit as st

    from ui import class_follow, class_session
    from ui.class_session import Membership

    m = st.session_state.setdefault(
        class_session.KEY, Membership("student", class_id, member_key=member_key))
    class_follow.before_run({}, "heads")
    if st.session_state.get("cut_short"):
        st.stop()
    class_follow.after_run("heads")
    st.session_state["version"] = m.version


def _poll(at: AppTest) -> bool:
    from ui import class_follow, class_session

    return class_follow.poll(at.session_state[class_session.KEY])


@pytest.fixture
def store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'classes.sqlite'}"
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", url)
    from teaching.class_store import open_store

    return open_store(url)


def test_a_run_cut_short_leaves_the_view_to_take_again(store):
    from ui import class_follow, class_session

    new = store.start_class()
    member = store.join(new.join_code, "Ann")
    version = store.set_view(new.teacher_key, "/heads?model=minilm")
    at = AppTest.from_function(_student_run, args=(new.class_id, member.member_key),
                               default_timeout=300)
    at.session_state["cut_short"] = True
    at.run()
    m = at.session_state[class_session.KEY]
    assert m.version != version and _poll(at) is True  # not taken: the poll reruns
    at.session_state["cut_short"] = False
    at.run()
    assert not at.exception and at.session_state["version"] == version
    assert _poll(at) is False  # taken: no more reruns
    later = store.set_view(new.teacher_key, "/heads?model=minilm&layer=2")
    at.session_state["cut_short"] = True
    for _ in range(class_follow.TAKES):  # a view that never finishes drawing: tried, then left
        at.run()
    assert at.session_state[class_session.KEY].version == later and _poll(at) is False
