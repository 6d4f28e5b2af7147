"""Warming a replica for the class's view (ui/class_warm.py): after the teacher publishes a
lesson step, a student's poll puts that step's run (and the next step's) in the shared cache
before any student's run asks for it, through the run queue and the memory budget; once per
link; a full budget evicts its oldest entry as for any run; over the memory ceiling nothing is
computed."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

pytestmark = pytest.mark.app

LESSON = "minilm-heads"


def _poll_script(class_id: str, member_key: str) -> None:
    """One student's poll (the class bar's timed fragment) in a session that follows."""
    import streamlit as st

    from ui import class_follow
    from ui.class_session import Membership

    m = Membership("student", class_id, member_key=member_key, version=0)
    st.session_state["due"] = class_follow.poll(m)


def _warm_script(link: str) -> None:
    import streamlit as st

    from ui import class_warm

    st.session_state["warmed"] = class_warm.warm(link)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A real SQLite class store, an empty memory budget and no link warmed yet."""
    url = f"sqlite:///{tmp_path / 'classes.sqlite'}"
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", url)
    from teaching.class_store import open_store
    from ui import cache, class_warm

    cache._run_cache.clear()
    class_warm.forget()
    queue = cache.run_queue()  # its history of holds is bounded: counted here from empty
    queue.holds.clear()
    queue.computing_holds.clear()
    yield open_store(url)
    cache._run_cache.clear()
    class_warm.forget()


def _lesson():
    from teaching.format import Lesson  # noqa: F401 - the bundled lessons are Lessons
    from ui.lesson_library import bundled

    return next(lesson for lesson in bundled() if lesson.id == LESSON)


def _run_key(step) -> tuple:
    return ("run", step.model, step.text, step.pair, "app", False)


def test_a_published_lesson_step_is_in_the_shared_cache_before_any_student_asks(fresh):
    from ui import cache

    store = fresh
    new = store.start_class()
    member = store.join(new.join_code, "Ann")
    step = _lesson().steps[0]
    store.set_view(new.teacher_key, f"/lessons?lesson={LESSON}&step=1")
    budget, queue = cache._run_cache(), cache.run_queue()
    assert _run_key(step) not in budget
    holds = len(queue.computing_holds)
    at = AppTest.from_function(_poll_script, args=(new.class_id, member.member_key),
                               default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["due"] is True  # the student's app then runs into the step
    assert _run_key(step) in budget  # computed by the poll, before that run
    assert len(queue.computing_holds) == holds + 1  # it took a slot in the run queue


def test_a_link_is_warmed_once_per_process(fresh):
    from ui import cache

    link = f"/lessons?lesson={LESSON}&step=2"
    first = AppTest.from_function(_warm_script, args=(link,), default_timeout=300).run()
    assert first.session_state["warmed"] is True
    holds = len(cache.run_queue().holds)
    again = AppTest.from_function(_warm_script, args=(link,), default_timeout=300).run()
    assert again.session_state["warmed"] is False
    assert len(cache.run_queue().holds) == holds  # no slot taken the second time


def test_a_page_link_warms_that_views_run(fresh):
    from ui import cache

    text = "Warm this text for the class, please."
    link = f"/attention?model=minilm&text={text.replace(' ', '+')}&layer=1"
    AppTest.from_function(_warm_script, args=(link,), default_timeout=300).run()
    assert ("run", "minilm", text, "", "app", False) in cache._run_cache()


def test_a_full_budget_evicts_its_oldest_entry_for_the_warmed_run(fresh, monkeypatch):
    from server import settings
    from ui import cache

    monkeypatch.setattr(settings, "memory_budget", lambda: (2, 64 * 2**20))
    cache._run_cache.clear()
    budget = cache._run_cache()
    budget.put(("old",), "an old entry")
    budget.put(("newer",), "a newer entry")
    link = f"/lessons?lesson={LESSON}&step=5"  # the last step: one run, no next step
    AppTest.from_function(_warm_script, args=(link,), default_timeout=300).run()
    assert _run_key(_lesson().steps[4]) in budget
    assert ("old",) not in budget and ("newer",) in budget  # least recently used went


def test_over_the_memory_ceiling_nothing_is_computed(fresh, monkeypatch):
    from ui import cache

    monkeypatch.setenv("ATTENTION_LAB_MEMORY_CEILING_MB", "1")  # any process is over 1 MB
    holds = len(cache.run_queue().holds)
    at = AppTest.from_function(_warm_script, args=(f"/lessons?lesson={LESSON}&step=3",),
                               default_timeout=300).run()
    assert not at.exception and at.session_state["warmed"] is True
    assert _run_key(_lesson().steps[2]) not in cache._run_cache()
    assert len(cache.run_queue().holds) == holds


def test_with_every_slot_held_the_poll_warms_nothing_and_does_not_wait(fresh):
    import threading

    from ui import cache

    queue = cache.run_queue()
    release, held = threading.Event(), threading.Barrier(queue.slots + 1)

    def heavy():
        with queue.slot():
            held.wait()
            release.wait(60)

    workers = [threading.Thread(target=heavy) for _ in range(queue.slots)]
    for w in workers:
        w.start()
    held.wait()
    link = f"/lessons?lesson={LESSON}&step=4"
    try:
        at = AppTest.from_function(_warm_script, args=(link,), default_timeout=30).run()
        assert at.session_state["warmed"] is True and queue.waiting == 0
        assert _run_key(_lesson().steps[3]) not in cache._run_cache()  # left to the reruns
    finally:
        release.set()
        for w in workers:
            w.join()


def test_the_first_poll_imports_every_page_a_class_can_be_taken_to_once(fresh, monkeypatch):
    """A page's first run in a process would import its modules while its students' runs wait
    on the import lock (the head statistics page brings pandas): the first class poll on a
    replica imports them all, once; never the teacher's own pages."""
    from teaching.pages import BY_PATH
    from ui import class_warm
    from ui.page_registry import module_name

    imported = []
    monkeypatch.setattr(class_warm.importlib, "import_module", imported.append)
    class_warm.warm_first_poll()
    assert set(imported) == {module_name(p) for p in BY_PATH if p not in ("teach", "join")}
    assert "app_pages.heads" in imported and len(imported) == len(set(imported))
    class_warm.warm_first_poll()  # once per process
    assert len(imported) == len(set(imported)) == len(BY_PATH) - 2
