"""How long a browser session's belongings outlive its tab, and who the browser is.

Streamlit is never told that a tab closed: the websocket drops and the session is parked for
two minutes so that a reconnect can resume it (a TTL cache that only expires when something
touches it). Whatever a page started for that session (a training thread, its model on disk)
would live on. So a page registers a cleanup with `on_session_end(session_id, key, callback)`,
and one reaper thread per process asks the runtime every WAKE_SECONDS which of those sessions
are still connected. A session that has been disconnected for GRACE_SECONDS gets its callbacks
run, and is then closed so that Streamlit drops its state too.

What a closed tab held is freed within FREED_WITHIN_SECONDS = GRACE_SECONDS + WAKE_SECONDS
(35 s; a training run ends after the step it is on, well under a second at the app's sizes).

Why 30 s of grace: when the connection drops (wifi, a laptop waking up) the frontend
reconnects to the same session within seconds, and that must not kill a run. A reload starts
a new session, whose page cannot show the old run anyway. A run lasts at most 180 s, so a much
longer grace would let an abandoned run finish anyway, and after 120 s Streamlit no longer
resumes a session.

`browser_id()` names the browser rather than the tab, so that limits hold across reloads: it
hashes the token in Streamlit's XSRF cookie (the cookie string is re-masked on every page load,
the token inside it stays). Without that cookie (XSRF protection off) it is the session id.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable

GRACE_SECONDS = 30
WAKE_SECONDS = 5
FREED_WITHIN_SECONDS = GRACE_SECONDS + WAKE_SECONDS
XSRF_COOKIE = "_streamlit_xsrf"

_LOG = logging.getLogger(__name__)


class Reaper:
    """Runs the cleanups of sessions that have been inactive for `grace` seconds, once each.

    No Streamlit in here: `is_active(session_id)` and `close(session_id)` are given, and so is
    the clock, so the decisions can be tested with fakes. Thread-safe.
    """

    def __init__(self, is_active: Callable[[str], bool], close: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic,
                 grace: float = GRACE_SECONDS) -> None:
        self._is_active, self._close, self._clock, self.grace = is_active, close, clock, grace
        self._callbacks: dict[str, dict[str, Callable[[], None]]] = {}
        self._inactive_since: dict[str, float] = {}
        self._lock = threading.Lock()

    def register(self, session_id: str, key: str, callback: Callable[[], None]) -> None:
        """Call `callback` when the session ends; the same key again replaces it."""
        with self._lock:
            self._callbacks.setdefault(session_id, {})[key] = callback

    def forget(self, session_id: str, key: str) -> None:
        with self._lock:
            callbacks = self._callbacks.get(session_id, {})
            callbacks.pop(key, None)
            if not callbacks:
                self._callbacks.pop(session_id, None)
                self._inactive_since.pop(session_id, None)

    def sessions(self) -> list[str]:
        with self._lock:
            return list(self._callbacks)

    def sweep(self) -> list[str]:
        """One look at every registered session; returns the ones ended now."""
        now = self._clock()
        ended = []
        for session_id in self.sessions():
            try:
                active = self._is_active(session_id)
            except Exception:  # unknown is not ended: never free what may still be in use
                _LOG.exception("Could not tell whether session %s is active", session_id)
                continue
            with self._lock:
                if active:
                    self._inactive_since.pop(session_id, None)
                    continue
                since = self._inactive_since.setdefault(session_id, now)
                if now - since < self.grace:
                    continue
                callbacks = self._callbacks.pop(session_id, {})
                del self._inactive_since[session_id]
            for key, callback in callbacks.items():
                try:
                    callback()
                except Exception:  # one failing cleanup must not keep the others from running
                    _LOG.exception("Cleanup %r of session %s failed", key, session_id)
            try:
                self._close(session_id)
            except Exception:
                _LOG.exception("Could not close session %s", session_id)
            ended.append(session_id)
        return ended


# ------------------------------------------------------------------- the Streamlit side
def current_session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def _xsrf_token(cookie: str) -> bytes:
    """The token inside an XSRF cookie: version 2 is "2|mask|token XOR mask|time", and the
    mask changes each time the server sets the cookie."""
    parts = cookie.strip("\"'").split("|")
    if len(parts) == 4 and parts[0] == "2":
        try:
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        except ValueError:
            return cookie.encode()
        if mask:
            return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked))
    return cookie.encode()


def browser_key(xsrf_cookie: str) -> str:
    """The opaque id of the browser that sent this XSRF cookie."""
    return "browser-" + hashlib.sha256(_xsrf_token(xsrf_cookie)).hexdigest()[:32]


def browser_id() -> str:
    """A stable, opaque id for this browser across reloads and tabs (see the module doc)."""
    import streamlit as st

    try:
        cookie = st.context.cookies.get(XSRF_COOKIE)
    except Exception:  # no client context (bare mode)
        cookie = None
    if isinstance(cookie, str) and cookie:  # (AppTest's mock client answers with a mock)
        return browser_key(cookie)
    return f"session-{current_session_id()}"


def client_address() -> str | None:
    """The address this session's connection comes from, or None when the server cannot tell
    (a local connection, no client). Behind the operator's reverse proxy it is the address the
    proxy passes on in the header settings.client_header() names (the last one of a list: the
    one the proxy added), else the connection's own (st.context.ip_address)."""
    import streamlit as st

    from . import settings

    header = settings.client_header()
    try:
        passed = ",".join(st.context.headers.get_all(header)) if header else ""
        address = st.context.ip_address
    except Exception:  # no client context (bare mode)
        return None
    if isinstance(passed, str) and passed.strip(" ,"):
        return passed.strip(" ,").split(",")[-1].strip()[:100] or None
    return address if isinstance(address, str) and address else None


def _is_active(session_id: str) -> bool:
    from streamlit import runtime

    if not runtime.exists():  # no server: nothing can tell, so nothing is freed
        return True
    return bool(runtime.get_instance().is_active_session(session_id))


def _close(session_id: str) -> None:
    """Close a disconnected session so Streamlit drops its state now, not at its TTL.

    Runtime.close_session must run on the server's event loop. In Streamlit 1.67 the public,
    thread-safe way there is clear_user_info_for_session (made for logout): it marks the id
    non-resumable (a late reconnect gets a fresh session, not one whose run is gone) and
    closes the stored session on the event loop, where it checks again that it is inactive.
    This app has no login, so the user info it also clears is empty."""
    from streamlit import runtime

    if runtime.exists():
        rt = runtime.get_instance()
        if not rt.is_active_session(session_id):
            rt.clear_user_info_for_session(session_id)


_REAPER = Reaper(_is_active, _close)
_THREAD: threading.Thread | None = None
_THREAD_LOCK = threading.Lock()


def _reap_forever() -> None:
    while True:
        time.sleep(WAKE_SECONDS)
        try:
            _REAPER.sweep()
        except Exception:  # the reaper must outlive any one bad sweep
            _LOG.exception("Session reaper sweep failed")


def start_reaper() -> bool:
    """Start the process's reaper thread once, under a real server; True if it runs."""
    global _THREAD
    from streamlit import runtime
    from streamlit.runtime import Runtime

    # AppTest installs a mock runtime that knows no sessions; no reaper there.
    if not runtime.exists() or type(runtime.get_instance()) is not Runtime:
        return False
    with _THREAD_LOCK:
        if _THREAD is None or not _THREAD.is_alive():
            _THREAD = threading.Thread(target=_reap_forever, name="attention-lab-reaper",
                                       daemon=True)
            _THREAD.start()
    return True


def on_session_end(session_id: str | None, key: str, callback: Callable[[], None]) -> None:
    """Run `callback` (once) after the session has been gone for GRACE_SECONDS. Registering
    the same key for the session again replaces the earlier callback."""
    if session_id is None:
        return
    _REAPER.register(session_id, key, callback)
    start_reaper()


def forget(session_id: str | None, key: str) -> None:
    if session_id is not None:
        _REAPER.forget(session_id, key)
