"""A per-session quota on uploaded files, so that uploads cannot fill the server's memory.

Streamlit accepts `PUT /_stcore/upload_file/<session_id>/<file_id>` from any live session that
holds the XSRF cookie, whether or not a page shows a file uploader, and keeps every file in
memory (`MemoryUploadedFileManager.file_storage`) until the frontend deletes it or the session
is shut down. `server.maxUploadSize` bounds one file, not how many a session may send.

The guard wraps `add_file` of the runtime's uploaded-file manager (the one the upload route
calls once a request's body is parsed) and refuses, with HTTP 413 and a message, a file that
would take its session over MAX_FILES_PER_SESSION files or MAX_BYTES_PER_SESSION bytes, or all
sessions together over MAX_BYTES_ALL_SESSIONS. Nothing is counted separately: the totals are
read from the manager's own storage under its lock, so files freed by Streamlit
(`remove_file` on DELETE, `remove_session_files` on session shutdown) are uncounted at once.

So that a quota cannot starve other users: files over SMALL_FILE_BYTES may fill all sessions'
room only up to MAX_BYTES_ALL_SESSIONS - RESERVED_FOR_SMALL_FILES (the rest stays for lesson
files), and before it checks, the guard frees every file that no widget of its session refers
to any more and that is older than UNUSED_GRACE_SECONDS (an upload no page still needs: the
uploader is gone from the page, or a client sent the file without one). It also frees the
files of sessions the runtime no longer knows.
Streamlit 1.67 frees a session's uploads only in `AppSession.shutdown()`; a session whose
browser went away is kept for reconnection (server.disconnectedSessionTTL, 2 minutes) and then
dropped from that storage *without* a shutdown, so its files would stay for the life of the
process. (There is no orphan cleanup for uploads either: a file whose uploader widget is gone
stays until its session ends.)

Install it from the app script (it runs on every rerun; installing again does nothing):

    from server import uploads
    uploads.install()

If Streamlit's internals are not what this module was written against, `install` logs one
warning and leaves uploads as they are; it never raises.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

_LOG = logging.getLogger(__name__)

# Per browser session (one tab). The app's uploads are a lesson file of a few KB and a text
# to train on (at most a few hundred KB); four files leave room to replace one or two.
MAX_FILES_PER_SESSION = 4
MAX_BYTES_PER_SESSION = 2 * 2**20  # 2 MB
# All sessions together: a last bound on what uploads may hold in this process, even if
# many sessions each fill their share.
MAX_BYTES_ALL_SESSIONS = 64 * 2**20  # 64 MB
# Of that, room kept for small files (a lesson file is at most 200 kB): larger files may fill
# the server only up to MAX_BYTES_ALL_SESSIONS - RESERVED_FOR_SMALL_FILES, so a class whose
# sessions each hold their 2 MB cannot keep a teacher's lesson file out.
RESERVED_FOR_SMALL_FILES = 8 * 2**20  # 8 MB
SMALL_FILE_BYTES = 256 * 2**10  # 256 kB
# An uploaded file that no widget of its session refers to any more (its uploader is gone: the
# page moved on, or a client PUT it without one) is freed once it is this old, when another
# upload needs the room. The browser sends the uploader's new state right after the upload.
UNUSED_GRACE_SECONDS = 30
# "Content Too Large": the request is well formed, but storing it would exceed the quota.
REFUSED_STATUS = 413

# Attribute set on a guarded manager: its presence makes `install` idempotent.
_MARK = "_attention_lab_upload_guard"
_install_lock = threading.Lock()
_warned: set[str] = set()

try:  # Streamlit 1.67 serves with Starlette; its routes turn an HTTPException into a response.
    from starlette.exceptions import HTTPException as _HTTPException
except Exception:  # noqa: BLE001  # pragma: no cover - without Starlette install() does nothing
    _HTTPException = None  # type: ignore[assignment,misc]


if _HTTPException is not None:

    class UploadRefused(_HTTPException):
        """Raised from add_file; the upload route answers it with REFUSED_STATUS and the text."""

        def __init__(self, detail: str) -> None:
            super().__init__(status_code=REFUSED_STATUS, detail=detail)

else:  # pragma: no cover

    class UploadRefused(Exception):  # type: ignore[no-redef]
        def __init__(self, detail: str) -> None:
            super().__init__(detail)
            self.status_code = REFUSED_STATUS
            self.detail = detail


def _guarded(mgr: Any) -> bool:
    return _MARK in getattr(mgr, "__dict__", {})  # not getattr: a Mock has every attribute


def _warn_once(reason: str) -> None:
    if reason not in _warned:
        _warned.add(reason)
        _LOG.warning("Upload quota not installed (uploads are not limited per session): %s",
                     reason)


def _size(rec: Any) -> int:
    return len(rec.data)


def _check_structure(mgr: Any) -> str | None:
    """None if `mgr` is the manager this guard was written for, else why not."""
    try:
        from streamlit.runtime.memory_uploaded_file_manager import (
            MemoryUploadedFileManager,
        )
    except Exception as e:  # noqa: BLE001
        return f"cannot import MemoryUploadedFileManager ({e})"
    if not isinstance(mgr, MemoryUploadedFileManager):
        return f"the uploaded-file manager is a {type(mgr).__qualname__}"
    if not isinstance(getattr(mgr, "file_storage", None), Mapping):
        return "MemoryUploadedFileManager has no file_storage mapping"
    lock = getattr(mgr, "_lock", None)
    if not (hasattr(lock, "__enter__") and hasattr(lock, "__exit__")):
        return "MemoryUploadedFileManager has no _lock"
    for name in ("add_file", "remove_session_files"):
        if not callable(getattr(mgr, name, None)):
            return f"MemoryUploadedFileManager has no {name}()"
    return None


class _Guard:
    """The quota around one manager's add_file (see guard_manager)."""

    def __init__(self, mgr: Any, limits: dict, is_known_session, needed_files,
                 clock: Callable[[], float]) -> None:
        self.mgr, self.limits, self.clock = mgr, limits, clock
        self.is_known_session, self.needed_files = is_known_session, needed_files
        self.original_add_file = mgr.add_file  # the bound method of the class
        self.check_lock = threading.Lock()  # one check-then-store at a time: two can't both fit
        self.added: dict[tuple[str, str], float] = {}  # (session, file id) → when it came

    def free_unknown_sessions(self, current: str) -> None:
        if self.is_known_session is None:
            return
        with self.mgr._lock:
            held = list(self.mgr.file_storage.keys())
        for sid in held:
            if sid == current:
                continue
            try:
                known = self.is_known_session(sid)
            except Exception:  # noqa: BLE001 - a lookup that fails frees nothing
                _LOG.debug("session lookup failed for %s", sid, exc_info=True)
                continue
            if not known:
                self.mgr.remove_session_files(sid)
                _LOG.info("freed the uploads of ended session %s", sid)

    def free_unused_files(self) -> None:
        """Free the files no widget of their session refers to, once UNUSED_GRACE_SECONDS old."""
        if self.needed_files is None:
            return
        cutoff = self.clock() - self.limits["unused_grace"]
        with self.mgr._lock:
            held = {sid: list(files) for sid, files in self.mgr.file_storage.items()}
        for sid, file_ids in held.items():
            old = [f for f in file_ids if self.added.get((sid, f), 0.0) <= cutoff]
            if not old:
                continue
            try:
                needed = self.needed_files(sid)
            except Exception:  # noqa: BLE001 - when it cannot tell, nothing is freed
                _LOG.debug("widget lookup failed for %s", sid, exc_info=True)
                continue
            for file_id in old if needed is not None else ():
                if file_id not in needed:
                    self.mgr.remove_file(sid, file_id)
                    _LOG.info("freed an upload no page uses any more (session %s)", sid)
        self.added = {k: t for k, t in self.added.items()
                      if k[1] in (self.mgr.file_storage.get(k[0]) or {})}

    def refusal(self, session_id: str, file: Any) -> str | None:
        limits, mgr = self.limits, self.mgr
        with mgr._lock:
            files = mgr.file_storage.get(session_id) or {}
            old = files.get(file.file_id)  # the same id again replaces that file
            n_files = len(files) + (old is None)
            delta = _size(file) - (_size(old) if old is not None else 0)
            n_bytes = sum(_size(f) for f in files.values()) + delta
            all_bytes = sum(_size(f) for s in mgr.file_storage.values()
                            for f in s.values()) + delta
        if n_files > limits["max_files"]:
            return (f"Upload refused: this session already holds {len(files)} uploaded "
                    f"files, the most allowed is {limits['max_files']}. Remove one first.")
        if n_bytes > limits["max_bytes"]:
            return (f"Upload refused: this session's uploaded files would take "
                    f"{n_bytes / 2**20:.1f} MB, the most allowed is "
                    f"{limits['max_bytes'] / 2**20:.1f} MB. Remove a file first.")
        room = limits["max_total_bytes"]
        if _size(file) > SMALL_FILE_BYTES:
            room -= limits["reserve_bytes"]  # the rest is kept for lesson files
        if all_bytes > room:
            return ("Upload refused: the server holds too many uploaded files right now. "
                    "Try again later.")
        return None

    def add_file(self, session_id: str, file: Any) -> None:
        with self.check_lock:
            self.free_unknown_sessions(session_id)
            self.free_unused_files()
            refusal = self.refusal(session_id, file)
            if refusal:
                raise UploadRefused(refusal)
            self.original_add_file(session_id=session_id, file=file)
            self.added[(session_id, file.file_id)] = self.clock()


def guard_manager(
    mgr: Any,
    *,
    max_files: int = MAX_FILES_PER_SESSION,
    max_bytes: int = MAX_BYTES_PER_SESSION,
    max_total_bytes: int = MAX_BYTES_ALL_SESSIONS,
    reserve_bytes: int = RESERVED_FOR_SMALL_FILES,
    is_known_session: Callable[[str], bool] | None = None,
    needed_files: Callable[[str], set[str] | None] | None = None,
    unused_grace: float = UNUSED_GRACE_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Wrap `mgr.add_file` with the quota. True if the guard is in place (now or before).

    `is_known_session(session_id)` says whether the runtime still has that session (connected
    or kept for reconnection); the files of unknown sessions are freed before each check.
    `needed_files(session_id)` names the file ids its widgets still refer to (None: cannot
    tell); its other files, once `unused_grace` seconds old, are freed before each check.
    Without them nothing is freed. They are called on the thread that calls add_file, which in
    the server is the event loop, the thread that owns the session manager. Files over
    SMALL_FILE_BYTES may fill all sessions' room only up to max_total_bytes - reserve_bytes.
    """
    with _install_lock:
        if _guarded(mgr):
            return True
        problem = _check_structure(mgr)
        if problem is None and _HTTPException is None:
            problem = "starlette is not importable, a refusal could not become an HTTP 4xx"
        if problem is not None:
            _warn_once(problem)
            return False
        limits = {"max_files": max_files, "max_bytes": max_bytes,
                  "max_total_bytes": max_total_bytes, "reserve_bytes": reserve_bytes,
                  "unused_grace": unused_grace}
        guard = _Guard(mgr, limits, is_known_session, needed_files, clock)
        add_file = guard.add_file
        # An instance attribute shadows the class's method: the upload route looks up
        # `upload_mgr.add_file` on every request, so it calls this one.
        mgr.add_file = add_file
        setattr(mgr, _MARK, limits)
        return True


def _file_ids(value: Any) -> set[str]:
    """The ids of uploaded files in a widget's value: a file, a list of them, or its state."""
    ids: set[str] = set()
    if getattr(value, "WhichOneof", None) is not None:  # a serialized WidgetState
        if value.WhichOneof("value") == "file_uploader_state_value":
            ids |= {i.file_id for i in value.file_uploader_state_value.uploaded_file_info}
        return ids
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(getattr(item, "file_id", None), str):
            ids.add(item.file_id)
    return ids


def _widget_file_lookup(rt: Any) -> Callable[[str], set[str] | None] | None:
    """needed_files for the runtime: the file ids in a session's widget states, or None."""
    get_info = getattr(getattr(rt, "_session_mgr", None), "get_session_info", None)
    if not callable(get_info):
        return None

    def needed(session_id: str) -> set[str] | None:
        info = get_info(session_id)
        state = getattr(getattr(info, "session", None), "session_state", None)
        new, old = getattr(state, "_new_widget_state", None), getattr(state, "_old_state", None)
        if info is None or not isinstance(getattr(new, "states", None), dict) or \
                not isinstance(old, dict):
            return None  # an ended session's files go by free_unknown_sessions
        ids: set[str] = set()
        for wstate in list(new.states.values()):  # a copy: the script thread may write
            ids |= _file_ids(getattr(wstate, "value", None))
        for value in list(old.values()):
            ids |= _file_ids(value)
        return ids
    return needed


def _session_lookup(rt: Any) -> Callable[[str], bool] | None:
    """is_known_session for the runtime, or None if its session manager is not reachable."""
    session_mgr = getattr(rt, "_session_mgr", None)
    get_info = getattr(session_mgr, "get_session_info", None)
    if not callable(get_info):
        _LOG.info("Upload quota: the runtime's sessions are not reachable, so the uploads of "
                  "ended sessions are not freed")
        return None
    return lambda session_id: get_info(session_id) is not None


def install() -> bool:
    """Put the quota on the running server's uploads. True if it is in place.

    Safe to call on every rerun of the app script, from any session's script thread: once
    installed it only reads one attribute. Never raises; without a Streamlit server (bare
    `python`, AppTest's mock runtime) it does nothing.
    """
    try:
        from streamlit import runtime

        if not runtime.exists():
            return False
        rt = runtime.get_instance()
        mgr = rt.uploaded_file_mgr
        if _guarded(mgr):
            return True
        if type(mgr).__module__.startswith("unittest.mock"):  # AppTest: no real server
            return False
        return guard_manager(mgr, is_known_session=_session_lookup(rt),
                             needed_files=_widget_file_lookup(rt))
    except Exception as e:  # noqa: BLE001 - an app must never fail because of this guard
        _warn_once(f"{type(e).__name__}: {e}")
        return False
