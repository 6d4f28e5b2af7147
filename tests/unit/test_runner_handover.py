"""A run's last messages reach the browser when a timed poll arrives just as the run ends
(ui/runner_handover.py), on Streamlit's own session and request objects: the old runner's
events are handled after the session started a new runner for the poll, only when the old one
finished by itself."""

from __future__ import annotations

import asyncio
from unittest.mock import MagicMock

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime import app_session
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.script_data import ScriptData
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.runtime.scriptrunner.script_runner import ScriptRunnerEvent
from streamlit.runtime.scriptrunner_utils.run_descriptor import RunDescriptor
from streamlit.runtime.scriptrunner_utils.script_requests import (
    RerunData, ScriptRequests, ScriptRequestType,
)

from ui import runner_handover

WORDS = "Your answer is in"


class Runner:
    """A ScriptRunner as the session sees it: its requests, its events, start and stop."""

    def __init__(self, **_) -> None:
        self._requests = ScriptRequests()
        self.on_event = MagicMock()

    def request_rerun(self, data: RerunData) -> bool:
        return self._requests.request_rerun(data)

    def request_stop(self) -> None:
        self._requests.request_stop()

    def start(self) -> None:
        self._requests.on_scriptrunner_ready()  # its first request: the run it was made for


@pytest.fixture(autouse=True)
def handover(monkeypatch):
    assert runner_handover.install()
    monkeypatch.setattr(app_session, "ScriptRunner", Runner)


def a_poll_as_the_run_ends(tmp_path, old_stops) -> tuple[list[ForwardMsg], bool]:
    """A session whose runner drew an answer's words and ended (`old_stops` says how); a
    class bar's poll arrives before the event loop handled the runner's last events; then
    those events. What the browser is sent, and whether the poll's runner stayed current."""
    script = tmp_path / "app.py"
    script.write_text("import streamlit as st\n", encoding="utf-8")

    async def scenario():
        session = AppSession(ScriptData(str(script)), MagicMock(), ScriptCache(), None, {})
        session.has_fragment = lambda fragment_id: True
        old = Runner()
        session._scriptrunner = old
        old_stops(old)
        poll = ClientState(fragment_id="class-bar", is_auto_rerun=True)
        session.request_rerun(poll)  # the old runner refuses it: a new one runs the poll
        new = session._scriptrunner
        assert new is not old
        words = ForwardMsg()
        words.delta.new_element.markdown.body = WORDS
        handle = session._handle_scriptrunner_event_on_event_loop
        handle(old, ScriptRunnerEvent.ENQUEUE_FORWARD_MSG, forward_msg=words)
        handle(old, ScriptRunnerEvent.SCRIPT_STOPPED_WITH_SUCCESS,
               run_descriptor=RunDescriptor("the-whole-run"))
        handle(old, ScriptRunnerEvent.SHUTDOWN)
        return session._browser_queue.flush(), session._scriptrunner is new

    return asyncio.run(scenario())


def finished(sent: list[ForwardMsg]) -> list[str]:
    return [ForwardMsg.ScriptFinishedStatus.Name(m.script_finished) for m in sent
            if m.WhichOneof("type") == "script_finished"]


def drawn(sent: list[ForwardMsg]) -> list[str]:
    return [m.delta.new_element.markdown.body for m in sent if m.WhichOneof("type") == "delta"]


def test_a_run_that_finished_by_itself_still_reaches_the_browser(tmp_path):
    sent, poll_runner_stays = a_poll_as_the_run_ends(
        tmp_path, lambda old: old._requests.on_scriptrunner_ready())  # nothing left to run
    assert drawn(sent) == [WORDS]
    assert finished(sent) == ["FINISHED_SUCCESSFULLY"]
    run = next(m for m in sent if m.WhichOneof("type") == "script_finished").metadata.run
    assert run.script_run_id == "the-whole-run"
    assert poll_runner_stays  # the old runner's shutdown leaves the poll's runner current


def test_a_runner_stopped_for_a_newer_run_is_still_ignored(tmp_path):
    sent, poll_runner_stays = a_poll_as_the_run_ends(
        tmp_path, lambda old: old.request_stop())  # e.g. st.stop() still unwinding
    assert drawn(sent) == [] and finished(sent) == []
    assert poll_runner_stays


def test_a_runner_is_marked_only_when_its_last_request_is_to_stop():
    requests = ScriptRequests()
    requests.request_rerun(RerunData())
    assert requests.on_scriptrunner_ready().type == ScriptRequestType.RERUN
    assert not getattr(requests, runner_handover.FINISHED_BY_ITSELF)
    assert requests.on_scriptrunner_ready().type == ScriptRequestType.STOP
    assert getattr(requests, runner_handover.FINISHED_BY_ITSELF)


def test_installing_twice_wraps_once():
    before = AppSession._handle_scriptrunner_event_on_event_loop
    assert runner_handover.install()
    assert AppSession._handle_scriptrunner_event_on_event_loop is before
    assert getattr(before, runner_handover.MARK)


def test_a_streamlit_without_these_methods_is_left_alone_and_said_once(monkeypatch, caplog):
    monkeypatch.setattr(runner_handover, "_refused", None)
    monkeypatch.delattr(AppSession, "_create_scriptrunner")  # as a newer Streamlit might
    handle = AppSession._handle_scriptrunner_event_on_event_loop
    with caplog.at_level("WARNING", logger=runner_handover.__name__):
        assert runner_handover.install() is False
        assert runner_handover.install() is False  # app.py calls it at every run
    assert AppSession._handle_scriptrunner_event_on_event_loop is handle
    said = [r.getMessage() for r in caplog.records if r.name == runner_handover.__name__]
    assert len(said) == 1 and "_create_scriptrunner" in said[0], said
