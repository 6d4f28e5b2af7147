"""The per-session upload quota (server/uploads.py): its accounting on Streamlit's own
MemoryUploadedFileManager, and a real server that refuses a flood of PUTs with 413."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.uploaded_file_manager import UploadedFileRec

from server import uploads

ROOT = Path(__file__).resolve().parents[2]
KB = 1024
MB = 2**20


def _usage(mgr, session_id: str) -> tuple[int, int]:
    """(files, bytes) the manager holds for one session, read under the manager's lock."""
    with mgr._lock:
        files = mgr.file_storage.get(session_id) or {}
        return len(files), sum(len(f.data) for f in files.values())


def _rec(file_id: str, size: int) -> UploadedFileRec:
    return UploadedFileRec(file_id=file_id, name=f"{file_id}.txt", type="text/plain",
                           data=b"x" * size)


def _refused(mgr, session_id: str, file_id: str, size: int) -> str:
    with pytest.raises(uploads.UploadRefused) as e:
        mgr.add_file(session_id, _rec(file_id, size))
    assert e.value.status_code == 413
    return e.value.detail


@pytest.fixture
def mgr():
    m = MemoryUploadedFileManager("/_stcore/upload_file")
    assert uploads.guard_manager(m, max_files=4, max_bytes=2 * MB, max_total_bytes=64 * MB)
    return m


# ---- accounting on the real manager ---------------------------------------------------------

def test_caps_per_session_and_removal_makes_room(mgr):
    mgr.add_file("a", _rec("a1", 1 * MB))
    mgr.add_file("a", _rec("a2", MB - 10 * KB))
    assert "2.0 MB" in _refused(mgr, "a", "a3", 20 * KB)  # bytes: over 2 MB
    mgr.add_file("a", _rec("a3", 4 * KB))
    mgr.add_file("a", _rec("a4", 4 * KB))
    assert "4" in _refused(mgr, "a", "a5", 1)  # count: a fifth file
    assert _usage(mgr, "a") == (4, 2 * MB - 2 * KB)

    # Another session is not affected by a's full quota, and fills its own.
    for i in range(4):
        mgr.add_file("b", _rec(f"b{i}", 100 * KB))
    _refused(mgr, "b", "b4", 1)
    _refused(mgr, "a", "a5", 1)

    # Removing a file (the frontend's DELETE) uncounts it at once.
    mgr.remove_file("a", "a1")
    mgr.add_file("a", _rec("a5", 900 * KB))
    assert _usage(mgr, "a") == (4, 2 * MB - 2 * KB - 1 * MB + 900 * KB)
    assert _usage(mgr, "b") == (4, 400 * KB)
    assert mgr.get_files("a", ["a1", "a5"])[0].file_id == "a5"  # refused files are not stored
    assert mgr.get_files("b", ["b4"]) == []

    # Shutting a session down frees all of its quota.
    mgr.remove_session_files("b")
    assert _usage(mgr, "b") == (0, 0)
    mgr.add_file("b", _rec("b9", 2 * MB))
    # The manager's own stats still add up (the original add_file did the storing).
    assert mgr._total_bytes == sum(len(f.data) for s in mgr.file_storage.values()
                                   for f in s.values())


def test_same_file_id_again_replaces_instead_of_adding(mgr):
    for i in range(4):
        mgr.add_file("a", _rec(f"f{i}", 500 * KB))
    mgr.add_file("a", _rec("f0", 400 * KB))  # a retried PUT: same id, not a fifth file
    mgr.add_file("a", _rec("f0", 548 * KB))  # 2 MB exactly
    assert _usage(mgr, "a") == (4, 2 * MB)
    _refused(mgr, "a", "f0", 549 * KB)


def test_all_sessions_together_are_capped():
    m = MemoryUploadedFileManager("/x")
    assert uploads.guard_manager(m, max_files=4, max_bytes=2 * MB, max_total_bytes=5 * MB,
                                 reserve_bytes=0)
    for s in "abcde":
        m.add_file(s, _rec("f", 1 * MB))
    assert "server" in _refused(m, "f", "f", 1)
    m.remove_session_files("a")
    m.add_file("f", _rec("f", 1 * MB))


def test_files_of_sessions_the_runtime_forgot_are_freed():
    alive = {"a", "b"}
    m = MemoryUploadedFileManager("/x")
    assert uploads.guard_manager(m, is_known_session=alive.__contains__)
    m.add_file("a", _rec("f", 1 * MB))
    m.add_file("b", _rec("f", 1 * MB))
    alive.discard("a")  # evicted from Streamlit's reconnect storage without a shutdown
    m.add_file("b", _rec("g", 1))
    assert "a" not in m.file_storage and _usage(m, "b") == (2, MB + 1)


def test_installing_twice_is_harmless(mgr):
    wrapped = mgr.add_file
    assert uploads.guard_manager(mgr)  # already guarded: a no-op with the first caps
    assert mgr.add_file is wrapped
    for i in range(4):
        mgr.add_file("a", _rec(str(i), 1))
    _refused(mgr, "a", "4", 1)


def test_fails_safe_when_streamlit_internals_differ(caplog):
    class Other:
        def add_file(self, session_id, file):
            self.added = file

    other = Other()
    with caplog.at_level(logging.WARNING, logger="server.uploads"):
        assert uploads.guard_manager(other) is False
    assert "not installed" in caplog.text
    other.add_file("a", _rec("f", 10 * MB))  # untouched
    assert other.added.file_id == "f"

    changed = MemoryUploadedFileManager("/x")
    del changed.file_storage  # as if a later Streamlit stored files differently
    assert uploads.guard_manager(changed) is False
    assert "add_file" not in vars(changed)


def test_install_without_a_server_does_nothing():
    from streamlit import runtime

    if runtime.exists():
        pytest.skip("a Streamlit runtime exists in this process")
    assert uploads.install() is False


# ---- quotas that cannot starve other users --------------------------------------------------

def test_sessions_holding_their_whole_quota_cannot_keep_a_lesson_file_out():
    """32 sessions × 2 MB filled the 64 MB server cap, and then every upload was refused, a
    teacher's lesson file too. Large files now leave room for small ones."""
    m = MemoryUploadedFileManager("/x")
    assert uploads.guard_manager(m)  # the server's own limits
    full = 0
    for i in range(32):
        try:
            m.add_file(f"student{i}", _rec("big", 2 * MB))
            full += 1
        except uploads.UploadRefused:
            pass
    assert 0 < full < 32  # the class filled what large files may take
    for i in range(4):  # several teachers' lesson files still fit
        m.add_file(f"teacher{i}", _rec("lesson", 150 * KB))
    assert _usage(m, "teacher3") == (1, 150 * KB)
    assert "server" in _refused(m, "late", "big", 2 * MB)


def test_an_upload_no_page_still_needs_is_freed_when_room_is_needed():
    now = {"t": 0.0}
    needed = {"a": {"kept"}, "b": set()}  # a's uploader shows "kept"; b has no uploader
    m = MemoryUploadedFileManager("/x")
    assert uploads.guard_manager(m, max_total_bytes=4 * MB, reserve_bytes=0,
                                 needed_files=lambda sid: needed.get(sid),
                                 clock=lambda: now["t"])
    m.add_file("a", _rec("kept", 1 * MB))
    m.add_file("a", _rec("dropped", 1 * MB))  # its uploader went away
    m.add_file("b", _rec("stray", 2 * MB))  # PUT without any uploader
    _refused(m, "c", "new", 1 * MB)  # still within the grace: nothing freed yet
    now["t"] = uploads.UNUSED_GRACE_SECONDS + 1
    m.add_file("c", _rec("new", 1 * MB))
    assert _usage(m, "a") == (1, 1 * MB) and m.get_files("a", ["kept"])
    assert _usage(m, "b") == (0, 0) and _usage(m, "c") == (1, 1 * MB)
    # the new file is young: it stays even though no widget names it yet
    now["t"] += 1
    m.add_file("d", _rec("x", 1))
    assert _usage(m, "c") == (1, 1 * MB)


def test_when_the_widgets_cannot_be_read_nothing_is_freed():
    now = {"t": 0.0}
    m = MemoryUploadedFileManager("/x")
    assert uploads.guard_manager(m, max_total_bytes=2 * MB, reserve_bytes=0,
                                 needed_files=lambda sid: None, clock=lambda: now["t"])
    m.add_file("a", _rec("f", 2 * MB))
    now["t"] = 10_000
    _refused(m, "b", "g", 1 * MB)
    assert _usage(m, "a") == (1, 2 * MB)


def test_file_ids_are_read_from_widget_states_and_from_uploaded_files():
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    state = WidgetState(id="w")
    info = state.file_uploader_state_value.uploaded_file_info.add()
    info.file_id = "abc"
    assert uploads._file_ids(state) == {"abc"}

    class Uploaded:
        file_id = "def"

    assert uploads._file_ids([Uploaded(), None]) == {"def"}
    assert uploads._file_ids(WidgetState(id="x", string_value="hi")) == set()
