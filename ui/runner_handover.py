"""A run's last messages reach the browser even when a timed poll arrives as the run ends.

What Streamlit does (1.67, runtime/app_session.py): each session runs its script on a
ScriptRunner thread, which hands its events to the server's event loop (the run's elements,
then "finished", then "shutdown") and, once a run is over and nothing else is asked of it,
refuses new requests. A fragment's timed rerun (a class bar's poll, twice a second) that the
event loop takes in after the runner stopped but before it handled those events makes the
session start a new runner, and from then on it ignores every event of the old one, however
old. The browser then never hears that the run finished: what the old view had and the new one
did not draw stays on screen, faded, until the next whole run. Under load it also loses the
run's last elements (an answer's "Your answer is in", a fragment's timer). In the class bench
this happened to a few of 30 students at most steps with a question, when all of them answered
at once (bench/bench_class.py: "unanswered").

What this changes: when a session starts a new runner because the old one had finished by
itself (`ScriptRequests.on_scriptrunner_ready` said stop: every event of its runs was already
handed over, so the event loop handles all of them before any of the new runner's), the session
still handles the old runner's events, in order, except its shutdown, which leaves the new
runner in place. A runner stopped any other way (a newer whole run asked for, the Stop button,
st.stop() still unwinding) is ignored as before: a newer run replaces what it drew.

`install()` wraps the three methods once per process; with another Streamlit whose methods are
not these, it leaves them alone and says so once in the server's log.
"""

from __future__ import annotations

import functools
import logging

_LOG = logging.getLogger(__name__)
FINISHED_BY_ITSELF = "_attention_lab_finished_by_itself"  # on a runner's ScriptRequests
HANDED_OVER = "_attention_lab_handed_over"  # on a session: the runner it replaced that way
MARK = "_attention_lab_handover"  # on each wrapped method


_refused: str | None = None  # why install() left Streamlit alone (said once)


def install() -> bool:
    """Wrap Streamlit's session and runner methods (once per process). True if in place.
    Called at every run of app.py; never raises."""
    global _refused
    if _refused is not None:
        return False
    try:
        from streamlit.runtime.app_session import AppSession
        from streamlit.runtime.scriptrunner.script_runner import ScriptRunnerEvent
        from streamlit.runtime.scriptrunner_utils.script_requests import (
            ScriptRequests, ScriptRequestType,
        )

        methods = (ScriptRequests.on_scriptrunner_ready, AppSession._create_scriptrunner,
                   AppSession._handle_scriptrunner_event_on_event_loop)
        stop, shutdown = ScriptRequestType.STOP, ScriptRunnerEvent.SHUTDOWN
    except (ImportError, AttributeError) as exc:  # another Streamlit: its own behaviour
        _refused = f"{type(exc).__name__}: {exc}"
        _LOG.warning("Run handover not installed: %s", _refused)
        return False
    if all(getattr(m, MARK, False) for m in methods):
        return True
    ScriptRequests.on_scriptrunner_ready = _marking_ready(methods[0], stop)
    AppSession._create_scriptrunner = _remembering_create(methods[1])
    AppSession._handle_scriptrunner_event_on_event_loop = _handling(methods[2], shutdown)
    return True


def _marking_ready(ready, stop):
    @functools.wraps(ready)
    def on_scriptrunner_ready(self):
        # said before the request is taken, so no refused request can come before it; taken
        # back if the runner goes on to another run
        setattr(self, FINISHED_BY_ITSELF, True)
        request = ready(self)
        if request.type != stop:
            setattr(self, FINISHED_BY_ITSELF, False)
        return request

    setattr(on_scriptrunner_ready, MARK, True)
    return on_scriptrunner_ready


def _remembering_create(create):
    @functools.wraps(create)
    def _create_scriptrunner(self, initial_rerun_data):
        old = self._scriptrunner  # None when the session stopped it for a newer whole run
        create(self, initial_rerun_data)
        finished = getattr(getattr(old, "_requests", None), FINISHED_BY_ITSELF, False)
        setattr(self, HANDED_OVER, old if finished and old is not self._scriptrunner else None)

    setattr(_create_scriptrunner, MARK, True)
    return _create_scriptrunner


def _handling(handle, shutdown):
    @functools.wraps(handle)
    def _handle_scriptrunner_event_on_event_loop(self, sender, event, *args, **kwargs):
        old = getattr(self, HANDED_OVER, None)
        if sender is None or sender is not old or sender is self._scriptrunner:
            return handle(self, sender, event, *args, **kwargs)
        if event == shutdown:  # its last event: the new runner stays the session's
            setattr(self, HANDED_OVER, None)
            return None
        current, self._scriptrunner = self._scriptrunner, sender
        try:
            return handle(self, sender, event, *args, **kwargs)
        finally:
            self._scriptrunner = current

    setattr(_handle_scriptrunner_event_on_event_loop, MARK, True)
    return _handle_scriptrunner_event_on_event_loop
