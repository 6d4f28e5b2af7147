"""The live class's store: what a class holds, the errors, the bounds, and `open_store()`.

A class has a join code for students, a teacher key that only the teacher holds, the teacher's
current view (a link, with a version that goes up by one at every change), its members (a
display name, following or looking around, when last seen), their answers (one per member per
question) and the questions already revealed. Two backends keep it: SQLite in one file (the
default; survives a restart of the server) and Redis (shared by replicas). Both behave the
same; tests/unit/test_class_store.py runs the same tests on each.

`ATTENTION_LAB_CLASS_STORE` picks the backend: unset or `sqlite:///path/file.sqlite` for SQLite
(default file `$ATTENTION_LAB_DATA/classes.sqlite`, else `~/.cache/attention-lab/
classes.sqlite`), `redis://host:port/db` for Redis. `ATTENTION_LAB_CLASS_HOURS` (default 4)
is how long a class lives: then it and all its data are deleted.

The data classes, errors and bounds live in teaching/class_store_base.py and are all
importable from here (`from teaching.class_store import ClassNotFound, MAX_MEMBERS, ...`).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from teaching.class_codes import MAX_NAME_CHARS  # noqa: F401 (a bound too)
from teaching.class_store_base import (  # noqa: F401 (the public names, re-exported)
    ANSWERS_PER_WINDOW, DEFAULT_CLASS_HOURS, MAX_ANSWERS, FAILED_CODES_PER_WINDOW, JOINS_PER_WINDOW,
    JOINS_PER_CLIENT, MAX_CHOICE_CHARS, MAX_LINK_BYTES, MAX_LIVE_CLASSES, MAX_MEMBER_ROWS,
    MAX_MEMBERS, MAX_QUESTION_CHARS, MAX_QUESTIONS, MAX_REMEMBERED, PRESENT_SECONDS, RATE_WINDOW,
    TEACHER_AWAY_SECONDS, ClassError, ClassFull, ClassNotFound,
    ClassStore, ClassView, Headcount, Member, NewClass, NotTeacher, Refused, Remembered,
    StoreDown, Tally,
    class_hours)

_stores: dict[str, ClassStore] = {}
_stores_lock = threading.Lock()


def default_url() -> str:
    url = os.environ.get("ATTENTION_LAB_CLASS_STORE", "").strip()
    if url:
        return url
    data = os.environ.get("ATTENTION_LAB_DATA", "").strip()
    folder = Path(data) if data else Path.home() / ".cache" / "attention-lab"
    return f"sqlite:///{folder / 'classes.sqlite'}"


def make_store(url: str, clock: Callable[[], float] = time.time,
               hours: float | None = None) -> ClassStore:
    """A new store for a URL (not cached): `sqlite:///path` or `redis://host:port/db`."""
    if url.startswith("sqlite:///"):
        from teaching.class_store_sqlite import SqliteClassStore

        return SqliteClassStore(url[len("sqlite:///"):], clock=clock, hours=hours)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from teaching.class_store_redis import RedisClassStore

        return RedisClassStore(url, clock=clock, hours=hours)
    raise ValueError("ATTENTION_LAB_CLASS_STORE must start with sqlite:/// (a file) or "
                     f"redis:// (a Redis server); it is {url!r}.")


def open_store(url: str | None = None) -> ClassStore:
    """The process's store for `url` (default: from ATTENTION_LAB_CLASS_STORE), opened once
    and shared by every session and thread of this process."""
    url = url or default_url()
    with _stores_lock:
        if url not in _stores:
            _stores[url] = make_store(url)
        return _stores[url]
