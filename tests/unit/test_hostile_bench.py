"""The hostile-mix bench's own parts (tests/harness/hostile_mix.py, load_tools.RssGuard): the guard
that kills a server which blows up, the lesson it uploads, and what counts as an answer."""

from __future__ import annotations

import subprocess
import sys
import time
import tomllib

from tests.harness.hostile_mix import answered, hostile_lesson
from tests.harness.load_tools import RssGuard

GROW = ("import time\nheld = []\nfor _ in range(40):\n    held.append(bytearray(10 * 2**20))\n"
        "    time.sleep(0.05)\ntime.sleep(30)\n")


def test_the_guard_kills_a_process_that_passes_its_bound_and_says_where():
    child = subprocess.Popen([sys.executable, "-c", GROW])
    try:
        with RssGuard(child, limit_mb=150, every_s=0.05) as guard:
            deadline = time.time() + 20
            while child.poll() is None and time.time() < deadline:
                time.sleep(0.1)
        assert child.poll() is not None  # killed, long before its 30 s sleep ended
        assert guard.killed_at_mb is not None and 150 < guard.killed_at_mb < 400
    finally:
        child.kill()
        child.wait()


def test_the_guard_leaves_a_process_under_its_bound_alone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    with RssGuard(child, limit_mb=2000, every_s=0.05) as guard:
        child.wait(10)
    assert guard.killed_at_mb is None and child.returncode == 0 and guard.peak_mb > 0


def test_the_hostile_lesson_is_a_lesson_file_with_the_placeholders_asked_for():
    lesson = tomllib.loads(hostile_lesson(10))
    assert lesson["steps"][0]["explain"].count("{prev.share:99999999}") == 10
    assert lesson["steps"][0]["page"] == "attention"


def test_a_result_or_a_message_is_an_answer_and_a_dead_server_is_not():
    assert answered({"ok": True})
    assert answered({"ok": False, "note_text": "short of memory"})
    assert answered({"ok": False, "busy_text": "number 3 in line", "error": "TimeoutError"})
    assert not answered({"ok": False, "error": "TimeoutError"})
    assert not answered({"ok": False, "note_text": "x", "error": "ConnectionClosedError"})
