"""One hostile client cannot lock a class or the server, on both stores (SQLite file, real
redis-server): its wrong codes slow only itself, a Join/Leave loop takes no place from the real
students, a class's places count the members present, and one client gets a part of a class's
join budget, never all of it."""

from __future__ import annotations

import threading

import pytest

from class_stores import clock, redis_url, store  # noqa: F401 (fixtures)
from teaching import class_store as cs
from teaching import class_store_base as cs_base
from teaching.class_codes import CODE_ALPHABET

HOSTILE, STUDENT = "203.0.113.66", "198.51.100.7"


def wrong_codes(right: str, n: int) -> list[str]:
    """n codes that are not `right` (all well-formed, so each one is looked up)."""
    codes, i = [], 0
    while len(codes) < n:
        code = "".join(CODE_ALPHABET[(i // len(CODE_ALPHABET) ** k) % len(CODE_ALPHABET)]
                       for k in range(6))
        i += 7919
        if code != right:
            codes.append(code)
    return codes


def test_a_thousand_wrong_codes_from_one_client_leave_another_client_joining(store):
    new = store.start_class()
    outcomes: list[str] = []

    def flood():
        for code in wrong_codes(new.join_code, 1000):
            try:
                store.join(code, "x", client=HOSTILE)
                outcomes.append("joined")
            except cs.Refused:
                outcomes.append("refused")
            except cs.ClassNotFound:
                outcomes.append("unknown")

    flooding = threading.Thread(target=flood)
    flooding.start()
    joined = []
    try:
        while flooding.is_alive() or not joined:  # the right code, again and again, meanwhile
            joined.append(store.join(new.join_code, f"Ann {len(joined)}", client=STUDENT))
            if len(joined) >= cs.JOINS_PER_CLIENT:
                break
    finally:
        flooding.join()
    assert len(outcomes) == 1000 and "joined" not in outcomes
    assert outcomes.count("unknown") == cs.FAILED_CODES_PER_WINDOW  # then refused, not looked up
    assert outcomes.count("refused") == 1000 - cs.FAILED_CODES_PER_WINDOW
    assert joined and all(m.class_id == new.class_id for m in joined)
    assert store.class_by_code(new.join_code, client="192.0.2.1") == new.class_id
    with pytest.raises(cs.Refused, match="Too many wrong codes"):
        store.join(new.join_code, client=HOSTILE)  # the flooding client itself waits


def test_the_flooding_client_may_try_again_in_the_next_window(store, clock):
    new = store.start_class()
    for code in wrong_codes(new.join_code, cs.FAILED_CODES_PER_WINDOW):
        with pytest.raises(cs.ClassNotFound):
            store.join(code, client=HOSTILE)
    assert store.class_by_code(new.join_code, client=HOSTILE) is None
    clock.now += cs.RATE_WINDOW
    assert store.join(new.join_code, "Late", client=HOSTILE).class_id == new.class_id


def test_a_join_leave_loop_of_a_thousand_leaves_room_for_the_real_students(store, clock):
    new = store.start_class()
    for i in range(1000):
        if i % cs.JOINS_PER_CLIENT == 0 and i:
            clock.now += cs.RATE_WINDOW
        member = store.join(new.join_code, client=HOSTILE)
        store.answer(new.class_id, member.member_key, "q:1", "A")
        store.leave(new.class_id, member.member_key)
    assert store.headcount(new.teacher_key).members == 0
    assert store.tally(new.teacher_key, "q:1").answered == 0  # a member's answers leave too
    students = _a_whole_class(store, clock, new)
    assert len(students) == cs.MAX_MEMBERS
    assert store.headcount(new.teacher_key).members == cs.MAX_MEMBERS
    for i, member in enumerate(students[:40]):
        assert store.answer(new.class_id, member.member_key, "q:2", "AB"[i % 2])
    assert store.tally(new.teacher_key, "q:2").answered == 40


def test_joins_never_seen_again_hold_no_place_and_a_bounded_number_of_rows(store, clock):
    new = store.start_class()
    for i in range(1000):  # joins from many addresses that never come back
        if i % cs.JOINS_PER_WINDOW == 0 and i:
            clock.now += cs.RATE_WINDOW
        store.join(new.join_code, client=f"10.9.{i // 250}.{i % 250}")
    assert _member_rows(store, new.class_id) <= cs.MAX_MEMBER_ROWS
    clock.now += cs.PRESENT_SECONDS + 1
    assert len(_a_whole_class(store, clock, new)) == cs.MAX_MEMBERS
    assert _member_rows(store, new.class_id) <= cs.MAX_MEMBER_ROWS


def test_one_client_gets_a_part_of_a_class_join_budget_never_all_of_it(store):
    new = store.start_class()
    outcomes = []
    for _ in range(cs.JOINS_PER_WINDOW):
        try:
            store.join(new.join_code, client=HOSTILE)
            outcomes.append("joined")
        except cs.Refused as exc:
            assert "try again in a few seconds" in str(exc)
            outcomes.append("wait")
    assert outcomes.count("joined") == cs.JOINS_PER_CLIENT < cs.JOINS_PER_WINDOW
    for n in range(cs.JOINS_PER_WINDOW - cs.JOINS_PER_CLIENT):  # the rest is the others'
        store.join(new.join_code, f"s{n}", client=f"10.2.0.{n}")
    with pytest.raises(cs.Refused):  # the class's own budget, all spent now
        store.join(new.join_code, client="10.3.0.1")


def test_a_member_who_leaves_is_gone_and_its_browser_is_not_brought_back(store):
    new = store.start_class()
    ada = store.join(new.join_code, "Ada", client=STUDENT)
    assert store.remember(new.class_id, "browser-ada", ada.member_key)
    store.leave(new.class_id, ada.member_key)
    store.leave(new.class_id, ada.member_key)  # twice, or a made-up member: nothing to do
    store.leave("no-such-class", "no-such-member")
    assert store.recall("browser-ada") is None
    with pytest.raises(cs.ClassNotFound):
        store.seen(new.class_id, ada.member_key)
    assert not store.answer(new.class_id, ada.member_key, "q:1", "A")


def test_leaving_gives_back_the_answers_a_class_keeps(store, clock, monkeypatch):
    monkeypatch.setattr(cs_base, "MAX_ANSWERS", 3)
    new = store.start_class()
    kept = []
    for n in range(6):  # a Join/Answer/Leave loop cannot use up the class's answers
        member = store.join(new.join_code, client=f"10.4.0.{n}")
        kept.append(store.answer(new.class_id, member.member_key, "q:1", "A"))
        store.leave(new.class_id, member.member_key)
    assert kept == [True] * 6
    stay = [store.join(new.join_code, client=f"10.5.0.{n}") for n in range(4)]
    assert [store.answer(new.class_id, m.member_key, "q:1", "B") for m in stay] == [True] * 3 + [False]


def _a_whole_class(store, clock, new) -> list:
    """MAX_MEMBERS students from their own addresses, each seen every window (present)."""
    students = []
    while len(students) < cs.MAX_MEMBERS:
        clock.now += cs.RATE_WINDOW
        for member in students:
            store.seen(new.class_id, member.member_key)
        for _ in range(cs.JOINS_PER_WINDOW):
            n = len(students)
            students.append(store.join(new.join_code, f"s{n}", client=f"10.8.{n // 200}.{n}"))
            if len(students) == cs.MAX_MEMBERS:
                break
    for member in students:
        store.seen(new.class_id, member.member_key)
    return students


def _member_rows(store, class_id: str) -> int:
    if hasattr(store, "path"):
        return store._db().execute("SELECT COUNT(*) FROM members WHERE class_id = ?",
                                   (class_id,)).fetchone()[0]
    return store.redis.hlen(store.key(f"c:{class_id}:members"))
