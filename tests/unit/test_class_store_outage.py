"""A class store that cannot be reached is out of touch (StoreDown), never a class that is gone
(ClassNotFound / NotTeacher), and everything is there again when it comes back: a real
redis-server restarted with SHUTDOWN SAVE and paused past the client's timeout; an SQLite file
locked by another process, and removed (no new empty file is made in its place) then put
back."""

from __future__ import annotations

import shutil
import sqlite3
import threading

import pytest

from class_stores import Clock
from redis_server import restartable_redis
from teaching import class_store_base as cs

QUESTION = "reading-heatmaps:3"


def a_class(store):
    """A class with a view, two members (one looking around) and one answer."""
    new = store.start_class()
    ann, bob = store.join(new.join_code, "Ann"), store.join(new.join_code, "Bob")
    store.set_view(new.teacher_key, "/heads?model=minilm")
    store.set_following(new.class_id, bob.member_key, False)
    assert store.answer(new.class_id, ann.member_key, QUESTION, "yes")
    return new, ann, bob


def out_of_touch(store, new, ann) -> None:
    """Every call a class makes says StoreDown: none says the class is gone."""
    for call in (lambda: store.view(new.class_id), lambda: store.headcount(new.teacher_key),
                 lambda: store.seen(new.class_id, ann.member_key),
                 lambda: store.set_view(new.teacher_key, "/heads?layer=2"),
                 lambda: store.tally(new.teacher_key, QUESTION)):
        with pytest.raises(cs.StoreDown):
            call()


def all_there(store, new, ann, bob, version: int = 1) -> None:
    view = store.view(new.class_id)
    assert (view.version, view.link, view.ended) == (version, "/heads?model=minilm", False)
    assert store.headcount(new.teacher_key) == cs.Headcount(2, 1, 1)
    assert store.tally(new.teacher_key, QUESTION).counts == {"yes": 1}
    assert store.answers_of(new.class_id, ann.member_key) == {QUESTION: "yes"}
    assert store.answers_of(new.class_id, bob.member_key) == {}
    assert store.set_view(new.teacher_key, "/heads?layer=3") == version + 1


def test_a_redis_restart_is_an_outage_and_the_class_is_all_there_afterwards():
    from teaching.class_store_redis import RedisClassStore

    with restartable_redis() as server:
        store = RedisClassStore(server.url)
        new, ann, bob = a_class(store)
        server.shut_down()
        out_of_touch(store, new, ann)
        server.start()
        all_there(store, new, ann, bob)
        store.close()


def test_a_paused_redis_is_an_outage_past_the_clients_timeout():
    from teaching.class_store_redis import RedisClassStore

    with restartable_redis() as server:
        store = RedisClassStore(server.url + "?socket_timeout=0.5")  # the app's is 10 s
        new, ann, bob = a_class(store)
        server.pause()
        with pytest.raises(cs.StoreDown):
            store.view(new.class_id)
        server.resume()
        all_there(store, new, ann, bob)
        store.close()


@pytest.fixture
def sqlite_store(tmp_path, monkeypatch):
    from teaching.class_store_sqlite import SqliteClassStore

    # a lock held longer than this is an outage (10 s in the app)
    monkeypatch.setattr(SqliteClassStore, "busy_seconds", 0.3)
    store = SqliteClassStore(tmp_path / "classes.sqlite", clock=Clock())
    yield store
    store.close()


def test_a_locked_sqlite_file_is_an_outage_for_changes_and_reads_go_on(sqlite_store):
    store = sqlite_store
    new, ann, bob = a_class(store)
    locker = sqlite3.connect(store.path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        fresh = []  # a thread with a connection opened while locked (as a new session's)
        thread = threading.Thread(target=lambda: fresh.append(store.view(new.class_id)))
        thread.start()
        thread.join()
        assert fresh and fresh[0].version == 1  # the class is still there to read
        for change in (lambda: store.set_view(new.teacher_key, "/heads?layer=2"),
                       lambda: store.seen(new.class_id, ann.member_key),
                       lambda: store.answer(new.class_id, bob.member_key, QUESTION, "no")):
            with pytest.raises(cs.StoreDown):
                change()
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    all_there(store, new, ann, bob)


def test_a_removed_sqlite_file_is_an_outage_not_a_new_empty_store(sqlite_store, tmp_path):
    store = sqlite_store
    new, ann, bob = a_class(store)
    kept = tmp_path / "kept.sqlite"
    with sqlite3.connect(store.path) as source, sqlite3.connect(kept) as copy:
        source.backup(copy)  # the operator's copy, to put back later
    for suffix in ("", "-wal", "-shm"):
        store.path.with_name(store.path.name + suffix).unlink(missing_ok=True)
    out_of_touch(store, new, ann)
    seen = []  # a new thread (a new session's run) too: no connection makes a new file
    thread = threading.Thread(target=lambda: seen.append(_raised(store, new)))
    thread.start()
    thread.join()
    assert seen == ["StoreDown"]
    assert not store.path.exists()  # no empty file in its place
    shutil.copyfile(kept, store.path)  # put back
    all_there(store, new, ann, bob)


def _raised(store, new) -> str:
    try:
        store.view(new.class_id)
    except Exception as exc:  # noqa: BLE001 - which one is the point
        return type(exc).__name__
    return "nothing"


def test_an_outage_is_said_once_in_the_log_when_it_begins_and_when_it_ends(sqlite_store,
                                                                           tmp_path, caplog):
    store = sqlite_store
    new, ann, _ = a_class(store)
    moved = tmp_path / "moved.sqlite"
    store.close()  # the file whole, with nothing left in its write-ahead log
    store.path.rename(moved)
    with caplog.at_level("WARNING", logger="attention_lab.class_store"):
        for _ in range(3):
            with pytest.raises(cs.StoreDown):
                store.view(new.class_id)
        moved.rename(store.path)
        assert store.view(new.class_id).version == 1
        store.view(new.class_id)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and "cannot be reached" in said[0] and "missing" in said[0], said
    assert "answers again" in said[1]
    assert new.teacher_key not in " ".join(said) and ann.member_key not in " ".join(said)
