"""A class through a store outage, in AppTest sessions (a teacher and two students) on a real
store taken away mid-class as an operator or a crash would: Redis restarted with SHUTDOWN SAVE,
Redis paused past the client's timeout, the SQLite file locked by another process, and removed
then put back.

While the store is away nobody's class ends: the screens say "Lost touch with the class —
trying again" (a lock still lets a student read the class: there only the student whose answer
waits to be sent says so);
the teacher moves on and a student answers meanwhile. Once it is back, the teacher's first poll
gives the class the new view and each student's first poll after that takes it (the polls come
every half second: well within 5 s), with both members and both answers counted."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import page_text  # noqa: E402
from redis_server import restartable_redis  # noqa: E402
from test_live_class import _clean, bar, poll, start_class  # noqa: E402
from test_live_class_answers import LESSON, student_in, teacher_on_step  # noqa: E402

pytestmark = pytest.mark.app

LOST = "Lost touch with the class — trying again"
QUESTION = f"{LESSON}:3"
KINDS = ("redis-restart", "redis-pause", "sqlite-lock", "sqlite-remove")


class Outage:
    """How one kind of outage begins and ends, on the store at `url`."""

    def __init__(self, kind: str, url: str, server=None, path=None):
        self.kind, self.url, self.server, self.path = kind, url, server, path
        self.locker: sqlite3.Connection | None = None

    def begin(self) -> None:
        if self.kind == "redis-restart":
            self.server.shut_down()
        elif self.kind == "redis-pause":
            self.server.pause()
        elif self.kind == "sqlite-lock":  # another process holds the write lock
            self.locker = sqlite3.connect(self.path, isolation_level=None)
            self.locker.execute("BEGIN IMMEDIATE")
        else:  # a copy kept by the operator, then the file and its journal removed
            with sqlite3.connect(self.path) as db, sqlite3.connect(self.kept) as copy:
                db.backup(copy)
            for suffix in ("", "-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)

    def end(self) -> None:
        if self.kind == "redis-restart":
            self.server.start()
        elif self.kind == "redis-pause":
            self.server.resume()
        elif self.kind == "sqlite-lock":
            self.locker.execute("ROLLBACK")
            self.locker.close()
        else:
            assert not self.path.exists()  # nothing made an empty store in its place
            shutil.copyfile(self.kept, self.path)

    @property
    def kept(self):
        return self.path.with_name("kept.sqlite")


@pytest.fixture(params=KINDS)
def outage(request, tmp_path, monkeypatch):
    kind = request.param
    if kind.startswith("redis"):
        with restartable_redis() as server:
            # the app's client waits 10 s for an answer; 1 s here, and the pause beats it
            yield Outage(kind, server.url + "?socket_timeout=1", server=server)
        return
    from teaching.class_store_sqlite import SqliteClassStore

    monkeypatch.setattr(SqliteClassStore, "busy_seconds", 0.5)  # the app's: 10 s
    path = tmp_path / "classes.sqlite"
    yield Outage(kind, f"sqlite:///{path}", path=path)


@pytest.fixture
def store(outage, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", outage.url)
    from teaching.class_store import open_store

    made = open_store(outage.url)
    yield made
    made.close()


def _poll(student) -> bool:
    from ui import class_follow

    return class_follow.poll(student.session_state["_class"])


def answer(student, choice: str) -> None:
    student.radio(key=f"lesson_choice_{LESSON}_3").set_value(choice).run()
    _clean(student.button(key="lesson_check").click().run())


def test_a_store_outage_ends_no_class_and_everyone_follows_once_it_is_back(store, outage):
    teacher, new = teacher_on_step(store, 3)
    ann, bob = student_in(new), student_in(new)
    answer(ann, "it depends on the sentence")
    assert store.tally(new.teacher_key, QUESTION).answered == 1

    outage.begin()
    teacher.query_params["step"] = "4"  # the teacher moves on: the class cannot be told yet
    _clean(teacher.run())  # its end: the view not given
    _clean(teacher.run())  # its bar's next poll says so (the bar is drawn before the page)
    assert LOST in page_text(teacher, ("info", "markdown"))
    assert "following" not in bar(teacher)  # one line, instead of the headcount
    answer(bob, "exactly one")  # kept in bob's session, to be sent
    assert "goes to the teacher as soon as the class is back" in page_text(bob, ("info",))
    for student in (ann, bob):
        assert _poll(student) is False  # nothing to take: the class's view is out of reach
        _clean(student.run())
        said = page_text(student, ("info", "markdown"))
        assert "The class has ended" not in said
        # a lock still lets a student read the class: out of touch only with an answer to send
        assert (LOST in said) == (outage.kind != "sqlite-lock" or student is bob)
        assert not student.session_state["_class"].ended
        assert student.query_params["step"] == "3"

    outage.end()
    _clean(teacher.run())  # the teacher's first poll: the class gets the new view
    assert store.view(new.class_id).link.startswith(f"/lessons?lesson={LESSON}&step=4")
    for student in (ann, bob):
        assert _poll(student) is True  # its first poll after the teacher's: follow
        poll(student)
        assert student.query_params["step"] == "4"
        assert "Following the teacher" in bar(student)
        assert LOST not in page_text(student, ("info", "markdown"))
    counts = store.tally(new.teacher_key, QUESTION).counts
    assert counts == {"it depends on the sentence": 1, "exactly one": 1}  # nothing lost
    assert store.headcount(new.teacher_key).members == 2
    assert "2 following · 0 looking around · 2 joined" in bar(_clean(teacher.run()))
    assert LOST not in page_text(teacher, ("info", "markdown"))


def test_the_teachers_end_during_an_outage_keeps_the_class_until_it_reaches_the_store(store,
                                                                                    outage):
    teacher, m = start_class()
    outage.begin()
    _clean(teacher.button(key="class_end").click().run())
    assert teacher.session_state["_class"].class_id == m.class_id  # still leading it
    assert "Please try again in a moment" in " ".join(e.value for e in teacher.error)
    outage.end()
    assert not store.view(m.class_id).ended
    _clean(teacher.button(key="class_end").click().run())
    assert "_class" not in teacher.session_state and store.view(m.class_id).ended
