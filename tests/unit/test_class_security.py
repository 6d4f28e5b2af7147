"""A live class is safe by default, on both stores: codes cannot be guessed in bulk, stale codes
lead nowhere, a student's key opens none of the teacher's actions, joins and answers are
bounded and rate-limited, names stay plain text, and an expired class leaves nothing behind."""

from __future__ import annotations

import multiprocessing
import random

import pytest

from class_stores import clock, leftovers, redis_url, store  # noqa: F401 (fixtures)
from teaching import class_store as cs
from teaching import class_store_base as cs_base
from teaching.class_codes import (CODE_ALPHABET, MAX_NAME_CHARS, clean_name, format_code,
                                  new_code, new_key, normalise_code)


def test_codes_use_no_look_alike_characters_and_keys_carry_128_bits():
    assert not set("0O1IL") & set(CODE_ALPHABET) and len(CODE_ALPHABET) == 31
    codes = {new_code() for _ in range(2000)}
    assert len(codes) > 1990 and all(len(c) == 6 and set(c) <= set(CODE_ALPHABET) for c in codes)
    keys = {new_key() for _ in range(200)}
    assert len(keys) == 200 and all(len(k) == 22 for k in keys)  # 16 bytes in base64


def test_a_typed_code_is_normalised_or_refused():
    assert format_code("ABCDEF") == "ABC-DEF"
    assert normalise_code(" abc-def ") == normalise_code("A B C D E F") == "ABCDEF"
    for wrong in ("ABCDE", "ABCDEFG", "ABCDE0", "ABC-DEI", "ÀBCDEF", "A" * 100, 123456, None):
        assert normalise_code(wrong) is None, wrong


def test_a_display_name_is_cleaned_to_short_plain_text():
    assert clean_name("  Ann\n\tLee\u2028 ") == "Ann Lee"
    assert clean_name("Ev\u202eil\u200b\x00\x1b[31m") == "Evil[31m"  # bidi, zero-width, ESC
    assert clean_name("<b>Bo</b>") == "<b>Bo</b>"  # kept as characters, never as markup
    assert len(clean_name("x" * 500)) == MAX_NAME_CHARS
    assert clean_name(None) == "" and clean_name("\x07\u200d") == ""
    with pytest.raises(ValueError, match="too long"):
        clean_name("x" * 1001)
    with pytest.raises(ValueError, match="must be text"):
        clean_name(["Ann"])


def test_an_html_name_is_stored_and_shown_as_the_same_plain_text(store):
    new = store.start_class()
    raw = '<img src=x onerror="alert(1)">\n<script>alert(2)</script>'
    member = store.join(new.join_code, raw)
    assert member.name == clean_name(raw) == raw.replace("\n", " ")[:MAX_NAME_CHARS]
    store.answer(new.class_id, member.member_key, "q:1", "<i>A</i>")
    tally = store.tally(new.teacher_key, "q:1", with_names=True)
    assert tally.names == {"<i>A</i>": [member.name]}
    with pytest.raises(cs.Refused, match="too long"):
        store.join(new.join_code, "x" * 5000)


def test_guessed_codes_are_refused_in_bulk(store, clock):
    new = store.start_class()
    rng = random.Random(7)
    guesses = {"".join(rng.choice(CODE_ALPHABET) for _ in range(6)) for _ in range(60)}
    guesses.discard(new.join_code)
    guesses = sorted(guesses)[:cs.FAILED_CODES_PER_WINDOW]
    for guess in guesses:
        with pytest.raises(cs.ClassNotFound, match="No live class has that code"):
            store.join(guess)
    # 50 wrong codes in this window: every look-up is refused now, the right code too.
    with pytest.raises(cs.Refused, match="Too many wrong codes"):
        store.join(new.join_code)
    assert store.class_by_code(new.join_code) is None
    clock.now += cs.RATE_WINDOW
    assert store.join(new.join_code, "Ann").name == "Ann"
    assert store.class_by_code(format_code(new.join_code)) == new.class_id


def test_a_stale_code_leads_nowhere(store, clock):
    ended, expired = store.start_class(), store.start_class()
    store.end_class(ended.teacher_key)
    with pytest.raises(cs.ClassNotFound):
        store.join(ended.join_code)
    clock.now += 4 * 3600
    for new in (ended, expired):
        with pytest.raises(cs.ClassNotFound):
            store.join(new.join_code)
        assert store.class_by_code(new.join_code) is None
        with pytest.raises(cs.NotTeacher):
            store.set_view(new.teacher_key, "/heads")


def test_a_student_key_opens_none_of_the_teachers_actions(store):
    new = store.start_class()
    store.set_view(new.teacher_key, "/heads")
    member = store.join(new.join_code, "Ann")
    store.answer(new.class_id, member.member_key, "q:1", "A")
    for wrong in (member.member_key, new.class_id, new.join_code, "", "x" * 10_000):
        with pytest.raises(cs.NotTeacher, match="not the teacher link"):
            store.set_view(wrong, "/attention?layer=5")
        for action in (store.tally, store.reveal):
            with pytest.raises(cs.NotTeacher):
                action(wrong, "q:1")
        with pytest.raises(cs.NotTeacher):
            store.headcount(wrong)
        with pytest.raises(cs.NotTeacher):
            store.end_class(wrong)
        assert store.teacher_class(wrong) is None
    assert store.view(new.class_id) == cs.ClassView(1, "/heads", frozenset(), ended=False)


def test_a_thousand_joins_stop_at_300_members_and_30_a_window(store, clock):
    """Joins from many clients, every member present (seen each window)."""
    new = store.start_class()
    outcomes, members = [], []
    for i in range(1000):
        if i % 40 == 0 and i:
            clock.now += cs.RATE_WINDOW
            for member in members:
                store.seen(new.class_id, member.member_key)
        try:
            members.append(store.join(new.join_code, f"s{i}", client=f"10.0.{i // 200}.{i}"))
            outcomes.append("joined")
        except cs.ClassFull as exc:
            assert "full" in str(exc)
            outcomes.append("full")
        except cs.Refused as exc:
            assert "try again in a few seconds" in str(exc)
            outcomes.append("wait")
    assert outcomes[:40] == ["joined"] * 30 + ["wait"] * 10  # 30 a window, then wait
    assert outcomes.count("joined") == cs.MAX_MEMBERS
    first_full = outcomes.index("full")
    assert outcomes[first_full:] == ["full"] * (1000 - first_full)  # the 301st and all after
    for member in members:
        store.seen(new.class_id, member.member_key)
    assert store.headcount(new.teacher_key).members == cs.MAX_MEMBERS


def test_answers_are_rate_limited_per_member(store, clock):
    new = store.start_class()
    fast, calm = store.join(new.join_code, "Fast"), store.join(new.join_code, "Calm")
    kept = [store.answer(new.class_id, fast.member_key, "q:1", "AB"[i % 2]) for i in range(15)]
    assert kept == [True] * cs.ANSWERS_PER_WINDOW + [False] * 5
    assert store.answer(new.class_id, calm.member_key, "q:1", "A")  # others still answer
    assert store.tally(new.teacher_key, "q:1").counts == {"B": 1, "A": 1}  # 10th answer kept
    clock.now += cs.RATE_WINDOW
    assert store.answer(new.class_id, fast.member_key, "q:1", "A")


def test_questions_per_class_and_link_length_are_bounded(store, clock):
    new = store.start_class()
    member = store.join(new.join_code)
    for i in range(cs.MAX_QUESTIONS):
        if i % cs.ANSWERS_PER_WINDOW == 0:
            clock.now += cs.RATE_WINDOW
        assert store.answer(new.class_id, member.member_key, f"q:{i}", "A")
    clock.now += cs.RATE_WINDOW
    assert not store.answer(new.class_id, member.member_key, "q:new", "A")
    assert store.answer(new.class_id, member.member_key, "q:3", "B")  # a known one still works
    with pytest.raises(cs.Refused, match="questions"):
        store.reveal(new.teacher_key, "q:new")
    store.reveal(new.teacher_key, "q:3")
    assert store.set_view(new.teacher_key, "/" + "a" * (cs.MAX_LINK_BYTES - 1)) == 1
    with pytest.raises(cs.Refused, match="too long"):
        store.set_view(new.teacher_key, "/" + "é" * cs.MAX_LINK_BYTES)
    with pytest.raises(cs.Refused):
        store.set_view(new.teacher_key, None)
    assert store.view(new.class_id).version == 1


def test_a_class_keeps_a_bounded_number_of_answers(store, clock, monkeypatch):
    monkeypatch.setattr(cs_base, "MAX_ANSWERS", 12)  # 15,000 in use: the same code path
    new = store.start_class()
    members = [store.join(new.join_code, f"s{i}") for i in range(5)]
    kept = [store.answer(new.class_id, m.member_key, f"q:{q}", "A")
            for q in range(3) for m in members]
    assert kept == [True] * 12 + [False] * 3
    assert store.answer(new.class_id, members[0].member_key, "q:0", "B")  # a change still fits
    assert store.answer(new.class_id, members[1].member_key, "q:2", "B")
    assert not store.answer(new.class_id, members[4].member_key, "q:2", "B")
    assert [store.tally(new.teacher_key, f"q:{q}").answered for q in range(3)] == [5, 5, 2]
    assert store.tally(new.teacher_key, "q:2").counts == {"A": 1, "B": 1}


def test_a_store_holds_at_most_500_live_classes(store, clock):
    for _ in range(cs.MAX_LIVE_CLASSES):
        store.start_class()
    with pytest.raises(cs.Refused, match="500 live classes"):
        store.start_class()
    clock.now += 4 * 3600  # they all expire: room again
    assert store.start_class().join_code


def test_expiry_removes_every_trace_of_a_class(store, clock):
    classes = [store.start_class() for _ in range(3)]
    for new in classes:
        members = [store.join(new.join_code, f"s{i}") for i in range(5)]
        store.set_view(new.teacher_key, "/heads")
        for i, member in enumerate(members):
            store.answer(new.class_id, member.member_key, "q:1", "AB"[i % 2])
            store.set_following(new.class_id, member.member_key, i % 2 == 0)
        store.reveal(new.teacher_key, "q:1")
    store.end_class(classes[0].teacher_key)
    later = store.start_class()
    store.join(later.join_code, "Late")
    assert store.expire(now=clock.now + 4 * 3600) == 4
    assert leftovers(store) == []


def test_made_up_ids_and_keys_are_unknown_whatever_they_contain(store):
    new = store.start_class()
    member = store.join(new.join_code, "Ann")
    store.answer(new.class_id, member.member_key, "q:1", "A")
    for wrong in (f"{new.class_id}:seen", f"{new.class_id}:members", "*", "", None, 42,
                  ["x"], "x" * 100):
        with pytest.raises(cs.ClassNotFound):
            store.view(wrong)
        with pytest.raises(cs.ClassNotFound):
            store.seen(wrong, member.member_key)
        with pytest.raises(cs.ClassNotFound):
            store.set_following(new.class_id, wrong, False)
        assert not store.answer(wrong, member.member_key, "q:2", "A")
        assert not store.answer(new.class_id, wrong, "q:2", "A")
    assert store.tally(new.teacher_key, "q:2").answered == 0
    assert store.headcount(new.teacher_key) == cs.Headcount(1, 1, 0)


def _join_from_another_process(kind, where, prefix, code, tries, results):
    """A child process (another server process or replica): its own store, the real clock."""
    import os

    from teaching.class_store_redis import RedisClassStore
    from teaching.class_store_sqlite import SqliteClassStore

    store = SqliteClassStore(where) if kind == "sqlite" else RedisClassStore(where, prefix=prefix)
    outcome, keys = [], []
    for i in range(tries):
        try:
            keys.append(store.join(code, f"late{i}", client=f"{os.getpid()}-{i}").member_key)
            outcome.append("joined")
        except cs.ClassError as exc:
            outcome.append(type(exc).__name__)
    results.put((outcome, keys))


def test_joins_from_four_processes_at_once_never_pass_300(store, clock):
    new = store.start_class()
    members = []
    for i in range(cs.MAX_MEMBERS - 10):  # 290 members, joined over the (test's) minutes
        if i % cs.JOINS_PER_WINDOW == 0:
            clock.now += cs.RATE_WINDOW
        members.append(store.join(new.join_code, f"s{i}", client=f"10.1.0.{i}").member_key)
    for key in members:  # all present (the children's clock is the real one, earlier)
        store.seen(new.class_id, key)
    kind = "sqlite" if hasattr(store, "path") else "redis"
    where = str(store.path) if kind == "sqlite" else store.redis.connection_pool.connection_kwargs
    if kind == "redis":
        where = f"redis://{where['host']}:{where['port']}/{where.get('db', 0)}"
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    children = [context.Process(target=_join_from_another_process,
                                args=(kind, where, getattr(store, "prefix", ""), new.join_code,
                                      6, results)) for _ in range(4)]
    for child in children:
        child.start()
    done = [results.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=60)
    outcomes = [o for outcome, _ in done for o in outcome]
    assert outcomes.count("joined") == 10  # 24 tries for the last 10 places
    assert set(outcomes) <= {"joined", "ClassFull"}
    clock.now += cs.RATE_WINDOW
    for key in members + [k for _, keys in done for k in keys]:
        store.seen(new.class_id, key)
    with pytest.raises(cs.ClassFull):
        store.join(new.join_code)
