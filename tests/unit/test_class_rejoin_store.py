"""A browser that comes back to its class (a reload, a replica that died): the class store
remembers which class a browser is in, on both backends (SQLite file, real redis-server)."""

from __future__ import annotations

from class_stores import clock, leftovers, make_backend, redis_url, store  # noqa: F401
from teaching import class_store as cs

BROWSER = "browser-0123456789abcdef0123456789abcdef"


def test_a_student_browser_is_recalled_into_its_class_until_it_leaves(store):
    new = store.start_class()
    ada = store.join(new.join_code, "Ada")
    assert store.recall(BROWSER) is None
    assert store.remember(new.class_id, BROWSER, ada.member_key)
    back = store.recall(BROWSER)
    assert back == cs.Remembered(new.class_id, member_key=ada.member_key, name="Ada",
                                 following=True)
    assert not back.teacher
    store.set_following(new.class_id, ada.member_key, False)  # looking around: said so
    assert store.recall(BROWSER) == cs.Remembered(new.class_id, member_key=ada.member_key,
                                                  name="Ada", following=False)
    assert store.recall("browser-someone-else") is None
    store.forget(BROWSER)
    assert store.recall(BROWSER) is None


def test_only_real_members_of_live_classes_are_remembered(store):
    new = store.start_class()
    ada = store.join(new.join_code)
    other = store.start_class()
    assert not store.remember(other.class_id, BROWSER, ada.member_key)  # not its member
    assert not store.remember(new.class_id, BROWSER, "made-up-key")
    assert not store.remember("no-such-class", BROWSER, ada.member_key)
    assert not store.remember(new.class_id, "", ada.member_key)  # no browser id: nothing kept
    assert store.recall(BROWSER) is None and store.recall("") is None


def test_the_browser_is_kept_only_as_a_hash(store):
    new = store.start_class()
    ada = store.join(new.join_code)
    store.remember(new.class_id, BROWSER, ada.member_key)
    store.remember_teacher(new.teacher_key, "browser-teacher")
    if type(store).__name__ == "SqliteClassStore":
        kept = " ".join(map(str, store._db().execute("SELECT * FROM rejoin").fetchall()))
    else:
        kept = " ".join(k + " " + (store.redis.get(k) or "") for k in
                        store.redis.scan_iter(match=f"{store.prefix}rejoin:*"))
    assert kept and BROWSER not in kept and "browser-teacher" not in kept
    assert new.teacher_key not in kept  # the teacher key is never copied


def test_the_teacher_role_comes_back_only_to_the_teacher_browser(store):
    new = store.start_class()
    assert store.remember_teacher(new.teacher_key, "browser-teacher")
    assert not store.remember_teacher("not-a-teacher-key", BROWSER)
    back = store.recall("browser-teacher")
    assert back.teacher and back.teacher_key == new.teacher_key
    assert back.class_id == new.class_id and back.member_key == ""
    assert store.recall(BROWSER) is None


def test_a_new_class_replaces_the_old_one_for_a_browser(store):
    first, second = store.start_class(), store.start_class()
    ada, bea = store.join(first.join_code), store.join(second.join_code)
    store.remember(first.class_id, BROWSER, ada.member_key)
    store.remember(second.class_id, BROWSER, bea.member_key)
    assert store.recall(BROWSER).class_id == second.class_id


def test_an_ended_or_expired_class_is_not_recalled_and_its_entries_go_with_it(store, clock):
    new = store.start_class()
    ada = store.join(new.join_code)
    store.remember(new.class_id, BROWSER, ada.member_key)
    store.remember_teacher(new.teacher_key, "browser-teacher")
    store.end_class(new.teacher_key)
    assert store.recall(BROWSER) is None and store.recall("browser-teacher") is None
    clock.now += store.lifetime + 1
    assert store.expire() == 1
    assert leftovers(store) == []


def test_the_class_member_bound_applies(store):
    new = store.start_class()
    member = store.join(new.join_code)
    for n in range(cs.MAX_REMEMBERED):
        assert store.remember(new.class_id, f"browser-{n}", member.member_key)
    assert not store.remember(new.class_id, "browser-one-too-many", member.member_key)
    assert store.remember(new.class_id, "browser-0", member.member_key)  # a known one: fine
    store.forget("browser-1")
    assert store.remember(new.class_id, "browser-one-too-many", member.member_key)


def test_a_sqlite_class_is_recalled_after_a_restart(tmp_path, clock, request):
    first = make_backend("sqlite", tmp_path, clock, request)
    new = first.start_class()
    ada = first.join(new.join_code)
    first.remember(new.class_id, BROWSER, ada.member_key)
    first.close()
    again = make_backend("sqlite", tmp_path, clock, request)
    try:
        assert again.recall(BROWSER) == cs.Remembered(new.class_id, member_key=ada.member_key,
                                                      name=ada.name)
    finally:
        again.close()


def test_the_teacher_role_comes_back_only_while_the_teacher_tab_was_seen_lately(store, clock):
    """A reload finds the teacher's browser fresh; a browser that comes back after its teacher
    tab has been gone for TEACHER_AWAY_SECONDS (a shared computer) finds nothing, for good."""
    new = store.start_class()
    ada = store.join(new.join_code, "Ada")
    store.remember(new.class_id, BROWSER, ada.member_key)
    assert store.remember_teacher(new.teacher_key, "browser-teacher")
    for _ in range(10):  # the teacher's tab says it is here every few seconds, for a long time
        clock.now += cs.TEACHER_AWAY_SECONDS / 2
        assert store.remember_teacher(new.teacher_key, "browser-teacher")
    clock.now += cs.TEACHER_AWAY_SECONDS - 1  # a reload, or a replica that died
    assert store.recall("browser-teacher").teacher_key == new.teacher_key
    clock.now += 2  # the tab has been gone for longer than the bound
    assert store.recall("browser-teacher") is None
    assert store.recall("browser-teacher") is None  # dropped, not only hidden
    assert store.recall(BROWSER).member_key == ada.member_key  # a student's entry has no bound
    assert store.teacher_class(new.teacher_key) == new.class_id  # the teacher link still leads
    assert store.remember_teacher(new.teacher_key, "browser-projector")
    assert store.recall("browser-projector").teacher


def test_a_sqlite_file_from_before_teacher_times_is_upgraded(tmp_path, clock, request):
    import sqlite3

    db = sqlite3.connect(tmp_path / "classes.sqlite")
    db.execute("CREATE TABLE rejoin (browser TEXT PRIMARY KEY, class_id TEXT NOT NULL, "
               "member_key TEXT NOT NULL, teacher INTEGER NOT NULL)")
    db.commit()
    db.close()
    store = make_backend("sqlite", tmp_path, clock, request)
    try:
        new = store.start_class()
        assert store.remember_teacher(new.teacher_key, "browser-teacher")
        assert store.recall("browser-teacher").teacher
    finally:
        store.close()
