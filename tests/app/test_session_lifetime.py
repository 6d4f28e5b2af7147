"""A session's lifetime bounds what it holds: the reaper's decisions (fake clock, fake session
manager), a closed session's training run stopped and freed, one run per browser, refused and
reset runs leaving no folder, and no server path on the training page."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from training import train as tr
from training.tasks import make_task
from server import sessions
from server import training_runs as runs

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "training"
# Long enough to still be going when the test ends it (a few seconds at this size).
LONG = tr.TrainSettings(task="induction", n_layers=1, n_heads=2, d_model=16, batch_size=8,
                        warmup=5, steps=3000, snapshot_every=500)


class FakeSessions:
    """The two things the reaper asks of Streamlit's session manager."""

    def __init__(self, *active: str) -> None:
        self.active = set(active)
        self.closed: list[str] = []

    def is_active(self, session_id: str) -> bool:
        return session_id in self.active

    def close(self, session_id: str) -> None:
        self.closed.append(session_id)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _reaper(manager: FakeSessions, clock: FakeClock) -> sessions.Reaper:
    return sessions.Reaper(manager.is_active, manager.close, clock=clock, grace=30)


def _save_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob(runs.SAVE_PREFIX + "*"))


@pytest.fixture(autouse=True)
def _clean():
    """Runs a test left going are discarded; folders it made are removed (so a failing test
    does not leave threads or files for the next)."""
    before = _save_dirs()
    made: list[runs.TrainingRun] = []
    original = runs.TrainingRun.start

    def start(self):
        made.append(self)
        original(self)

    runs.TrainingRun.start = start
    try:
        yield
    finally:
        runs.TrainingRun.start = original
        for run in made:
            run.discard()
            run.join(30)
        for path in _save_dirs() - before:
            shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------ the reaper alone
def test_a_session_gone_past_the_grace_has_its_callbacks_run_once_and_is_closed():
    manager, clock = FakeSessions("s1"), FakeClock()
    reaper, calls = _reaper(manager, clock), []
    reaper.register("s1", "run", lambda: calls.append("run"))
    reaper.register("s1", "other", lambda: calls.append("other"))
    assert reaper.sweep() == []
    manager.active.clear()  # the tab closed
    assert reaper.sweep() == [] and calls == []  # first seen gone now
    clock.now += 30
    assert reaper.sweep() == ["s1"]
    assert sorted(calls) == ["other", "run"] and manager.closed == ["s1"]
    clock.now += 60
    assert reaper.sweep() == [] and len(calls) == 2 and manager.closed == ["s1"]  # once


def test_an_active_session_or_one_within_the_grace_is_left_alone():
    manager, clock = FakeSessions("live"), FakeClock()
    reaper, calls = _reaper(manager, clock), []
    reaper.register("live", "run", lambda: calls.append("live"))
    reaper.register("blip", "run", lambda: calls.append("blip"))
    reaper.sweep()
    clock.now += 29  # "blip" has been away 29 s: a reload or a wifi drop
    reaper.sweep()
    manager.active.add("blip")  # ...and it came back
    clock.now += 600
    assert reaper.sweep() == [] and calls == [] and manager.closed == []
    manager.active.discard("blip")  # gone again: the grace starts over
    reaper.sweep()
    clock.now += 29
    assert reaper.sweep() == [] and calls == []


def test_a_failing_callback_does_not_stop_the_others_or_the_close():
    manager, clock = FakeSessions(), FakeClock()
    reaper, calls = _reaper(manager, clock), []

    def boom():
        raise RuntimeError("cleanup failed")

    reaper.register("s1", "a", boom)
    reaper.register("s1", "b", lambda: calls.append("b"))
    reaper.register("s2", "a", lambda: calls.append("s2"))
    reaper.sweep()
    clock.now += 31
    assert sorted(reaper.sweep()) == ["s1", "s2"]
    assert sorted(calls) == ["b", "s2"] and sorted(manager.closed) == ["s1", "s2"]


def test_registering_a_key_again_replaces_it_and_forget_removes_it():
    manager, clock = FakeSessions(), FakeClock()
    reaper, calls = _reaper(manager, clock), []
    reaper.register("s1", "run", lambda: calls.append("old"))
    reaper.register("s1", "run", lambda: calls.append("new"))
    reaper.register("s2", "run", lambda: calls.append("forgotten"))
    reaper.forget("s2", "run")
    reaper.sweep()
    clock.now += 31
    reaper.sweep()
    assert calls == ["new"]


def test_the_browser_id_survives_a_new_cookie_mask_but_not_a_new_token():
    from streamlit.web.server.starlette.starlette_app_utils import (
        generate_xsrf_token_string,
    )

    token = os.urandom(16)
    # The server re-masks the same token each time it sets the cookie (every page load).
    first, reload = generate_xsrf_token_string(token), generate_xsrf_token_string(token)
    assert first != reload
    assert sessions.browser_key(first) == sessions.browser_key(reload)
    assert sessions.browser_key(first) != sessions.browser_key(
        generate_xsrf_token_string(os.urandom(16)))
    assert token.hex() not in sessions.browser_key(first)  # opaque
    assert sessions.FREED_WITHIN_SECONDS == sessions.GRACE_SECONDS + sessions.WAKE_SECONDS


# ------------------------------------------------------------ the reaper and a training run
def test_closing_a_session_stops_and_frees_its_training_run(monkeypatch):
    monkeypatch.setattr(runs, "_SLOTS", threading.BoundedSemaphore(1))  # it takes the only one
    saved = []
    monkeypatch.setattr(runs, "save_model", lambda *args, **kwargs: saved.append(args))
    manager, clock = FakeSessions("s1"), FakeClock()
    reaper = _reaper(manager, clock)
    run = runs.TrainingRun(make_task("induction"), LONG, runs.new_save_dir)
    runs.start(run, "browser-A")
    reaper.register("s1", "train_run", run.discard)
    folder = run.save_dir
    assert folder.is_dir() and run.running
    with pytest.raises(runs.ServerBusy):
        runs.start(runs.TrainingRun(make_task("induction"), LONG), "browser-B")

    manager.active.clear()  # the tab closed
    reaper.sweep()
    clock.now += 31
    assert run.running  # still training when its session is declared over
    assert reaper.sweep() == ["s1"] and manager.closed == ["s1"]

    assert run.join(10), "the run's thread did not end"
    assert saved == [] and not folder.exists()
    assert run.result is None and run.snapshots == [] and run.view()[0] == "discarded"
    again = runs.TrainingRun(make_task("induction"), LONG)  # the slot is free again
    runs.start(again, "browser-B")
    assert again.running


# --------------------------------------------------------------------- slots and browsers
def test_the_same_browser_in_a_new_session_replaces_its_running_run():
    first = runs.TrainingRun(make_task("induction"), LONG, runs.new_save_dir)
    runs.start(first, "browser-B")  # session 1
    folder = first.save_dir
    second = runs.TrainingRun(make_task("induction"), LONG, runs.new_save_dir)
    runs.start(second, "browser-B")  # session 2, after a reload: no slot left to the old run
    assert first.discarded and not first.running and not folder.exists()
    assert second.running and not second.discarded and second.save_dir.is_dir()


def test_a_third_browser_is_refused_and_no_folder_is_made(monkeypatch):
    monkeypatch.setattr(runs, "_SLOTS", threading.BoundedSemaphore(runs.MAX_CONCURRENT_RUNS))
    for browser in ("browser-A", "browser-B"):
        runs.start(runs.TrainingRun(make_task("induction"), LONG, runs.new_save_dir), browser)
    before = _save_dirs()
    third = runs.TrainingRun(make_task("induction"), LONG, runs.new_save_dir)
    with pytest.raises(runs.ServerBusy):
        runs.start(third, "browser-C")
    assert _save_dirs() == before and third.save_dir is None


def test_discarding_a_running_run_leaves_no_folder_and_saves_nothing(monkeypatch):
    saved = []
    monkeypatch.setattr(runs, "save_model", lambda *args, **kwargs: saved.append(args))
    run = runs.TrainingRun(make_task("induction"), LONG, runs.new_save_dir)
    run.start()
    folder = run.save_dir
    run.discard()
    assert run.join(10) and not folder.exists() and saved == []


# ------------------------------------------------------------------------- the page
def _page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    return switch(at, PAGE).run()


def _start(at: AppTest, steps: int) -> AppTest:
    at.slider(key="train_layers").set_value(1)
    at.select_slider(key="train_heads").set_value(2)
    at.select_slider(key="train_d_model").set_value(16)
    at.slider(key="train_steps").set_value(steps).run()
    return at.button(key="train_start").click().run()


def _page_text(at: AppTest) -> str:
    """Every element's message, sidebar included: all the text the browser is sent."""
    parts = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(parts)


def test_reset_in_the_middle_of_a_run_leaves_no_folder():
    at = _start(_page(), 3000)
    run = at.session_state["train_run"]
    folder = run.save_dir
    assert run.running and folder.is_dir()
    at.button(key="train_reset").click().run()
    assert not at.exception and "train_run" not in at.session_state
    assert run.join(10) and not folder.exists()


def test_a_refused_start_on_the_page_leaves_no_folder(monkeypatch):
    monkeypatch.setattr(runs, "_SLOTS", threading.BoundedSemaphore(1))
    assert runs._SLOTS.acquire(blocking=False)  # another user holds the only slot
    before = _save_dirs()
    at = _start(_page(), 100)
    assert not at.exception and any("already going" in e.value for e in at.error)
    assert "train_run" not in at.session_state and _save_dirs() == before


def test_the_page_shows_no_server_path_after_a_run():
    at = _start(_page(), 50)
    run = at.session_state["train_run"]
    run.join(60)
    at.run()
    assert not at.exception and run.view()[0] == "done" and run.save_dir.is_dir()
    text = _page_text(at)
    assert "Your trained model" in text  # the finished run's section is there
    for path in ("/tmp", tempfile.gettempdir(), str(run.save_dir), runs.SAVE_PREFIX):
        assert path not in text, path
    assert f"within {sessions.FREED_WITHIN_SECONDS} seconds" in text


def test_a_run_replaced_from_another_tab_is_gone_from_this_one_with_a_message():
    at = _start(_page(), 3000)
    run = at.session_state["train_run"]
    browser = next(b for b, r in runs._BY_BROWSER.items() if r is run)
    other_tab = runs.TrainingRun(make_task("induction"), LONG, runs.new_save_dir)
    runs.start(other_tab, browser)  # the same browser starts a run in another tab
    assert run.discarded and not run.running
    at.run()
    assert not at.exception and "train_run" not in at.session_state
    assert any("newer run was started from this browser" in w.value for w in at.warning)
    assert not at.button(key="train_start").disabled  # this tab may start again
