"""The live class store behaves as the contract says, on both backends: the same tests run on
SQLite (a real file) and on Redis (a real redis-server started by the run). Time is moved by
hand through the store's clock, never slept."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from class_stores import clock, leftovers, make_backend, redis_url, store  # noqa: F401
from teaching import class_store as cs
from teaching.class_codes import CODE_ALPHABET, format_code

ROOT = Path(__file__).resolve().parents[2]


def test_a_new_class_has_a_short_code_and_long_secret_keys(store):
    new = store.start_class()
    assert len(new.join_code) == 6 and set(new.join_code) <= set(CODE_ALPHABET)
    assert len(new.teacher_key) >= 22 and new.teacher_key != new.class_id  # 16 bytes, base64
    other = store.start_class()
    assert {other.join_code, other.teacher_key} & {new.join_code, new.teacher_key} == set()
    assert store.teacher_class(new.teacher_key) == new.class_id
    assert store.join_code(new.teacher_key) == new.join_code  # the teacher link shows the code
    assert store.join_code(new.class_id) is None and store.join_code(None) is None
    assert store.view(new.class_id) == cs.ClassView(version=0, link="", revealed=frozenset(),
                                                    ended=False)


def test_a_code_is_found_in_any_case_with_or_without_the_dash(store):
    new = store.start_class()
    shown = format_code(new.join_code)  # "ABC-DEF"
    for typed in (shown, shown.lower(), new.join_code, f" {shown[:3]} {shown[4:]} "):
        assert store.class_by_code(typed) == new.class_id
    assert store.class_by_code("") is None and store.class_by_code(None) is None


def test_every_view_change_adds_one_to_the_version(store):
    new = store.start_class()
    links = ["/attention?model=minilm&layer=2", "/heads", "/lessons?lesson=intro&step=3"]
    versions = [store.set_view(new.teacher_key, link) for link in links]
    assert versions == [1, 2, 3]
    assert store.view(new.class_id).link == links[-1]
    assert store.view(new.class_id).version == 3


def test_members_get_clean_names_and_a_number_when_they_give_none(store):
    new = store.start_class()
    ann = store.join(new.join_code, "  Ann \n\t Lee ")
    anon = [store.join(new.join_code), store.join(new.join_code, "\u200b\x07 ")]
    assert ann.name == "Ann Lee"
    assert [m.name for m in anon] == ["Student 2", "Student 3"]
    assert len({ann.member_key, *(m.member_key for m in anon)}) == 3


def test_headcount_counts_members_seen_in_the_last_30_seconds(store, clock):
    new = store.start_class()
    members = [store.join(new.join_code, f"s{i}") for i in range(4)]
    store.set_following(new.class_id, members[0].member_key, False)
    assert store.headcount(new.teacher_key) == cs.Headcount(4, 3, 1)
    clock.now += 20
    store.seen(new.class_id, members[1].member_key)
    store.set_following(new.class_id, members[0].member_key, True)  # counts as seen too
    clock.now += 15  # 35 s after joining: only the two seen at 20 s are present
    assert store.headcount(new.teacher_key) == cs.Headcount(2, 2, 0)
    store.set_following(new.class_id, members[2].member_key, False)
    assert store.headcount(new.teacher_key) == cs.Headcount(3, 2, 1)


def test_one_answer_per_member_per_question_the_last_one_counts(store):
    new = store.start_class()
    members = [store.join(new.join_code, name) for name in ("Cy", "Ann", "Bo")]
    for member, choice in zip(members, ["A", "B", "A"]):
        assert store.answer(new.class_id, member.member_key, "intro:2", choice)
    assert store.answer(new.class_id, members[0].member_key, "intro:2", "B")  # changes mind
    assert store.answer(new.class_id, members[1].member_key, "cell:attention:1", "3,4")
    tally = store.tally(new.teacher_key, "intro:2")
    assert tally == cs.Tally("intro:2", {"A": 1, "B": 2}, answered=3, names=None)
    named = store.tally(new.teacher_key, "intro:2", with_names=True)
    assert named.names == {"A": ["Bo"], "B": ["Ann", "Cy"]}
    assert store.tally(new.teacher_key, "cell:attention:1").counts == {"3,4": 1}
    assert store.tally(new.teacher_key, "never:asked") == cs.Tally("never:asked", {}, 0, None)
    assert store.tally(new.teacher_key, ["intro:2"]).answered == 0  # not a question id


def test_answers_that_cannot_be_kept_are_refused_with_false(store):
    new = store.start_class()
    member = store.join(new.join_code)
    assert not store.answer(new.class_id, member.member_key, "q:1", "x" * 101)
    assert not store.answer(new.class_id, member.member_key, "q" * 201, "A")
    assert not store.answer(new.class_id, member.member_key, "q:1", "")
    assert not store.answer(new.class_id, "not-a-member", "q:1", "A")
    assert not store.answer("no-such-class", member.member_key, "q:1", "A")
    assert store.answer(new.class_id, member.member_key, "q:1", "x" * 100)


def test_reveal_shows_to_everyone_and_closes_the_question(store):
    new = store.start_class()
    member = store.join(new.join_code)
    assert store.answer(new.class_id, member.member_key, "intro:2", "A")
    store.reveal(new.teacher_key, "intro:2")
    store.reveal(new.teacher_key, "intro:5")  # a question nobody answered yet
    assert store.view(new.class_id).revealed == {"intro:2", "intro:5"}
    assert not store.answer(new.class_id, member.member_key, "intro:2", "B")
    assert store.tally(new.teacher_key, "intro:2").counts == {"A": 1}
    with pytest.raises(cs.Refused):
        store.reveal(new.teacher_key, "")


def test_an_ended_class_takes_no_one_but_keeps_its_results(store):
    new = store.start_class()
    member = store.join(new.join_code, "Ann")
    store.set_view(new.teacher_key, "/heads")
    assert store.answer(new.class_id, member.member_key, "q:1", "A")
    store.end_class(new.teacher_key)
    store.end_class(new.teacher_key)  # twice is fine
    assert store.class_by_code(new.join_code) is None
    assert store.teacher_class(new.teacher_key) is None
    with pytest.raises(cs.ClassNotFound):
        store.join(new.join_code)
    with pytest.raises(cs.NotTeacher):
        store.set_view(new.teacher_key, "/attention")
    with pytest.raises(cs.NotTeacher):
        store.reveal(new.teacher_key, "q:1")
    assert not store.answer(new.class_id, member.member_key, "q:2", "A")
    assert store.view(new.class_id) == cs.ClassView(1, "/heads", frozenset(), ended=True)
    assert store.tally(new.teacher_key, "q:1").counts == {"A": 1}
    assert store.headcount(new.teacher_key).members == 1


def test_a_class_expires_after_its_hours_with_all_its_data(store, clock):
    new = store.start_class()
    member = store.join(new.join_code, "Ann")
    store.answer(new.class_id, member.member_key, "q:1", "A")
    store.reveal(new.teacher_key, "q:1")
    clock.now += 4 * 3600 - 1
    assert store.class_by_code(new.join_code) == new.class_id
    clock.now += 1
    assert store.class_by_code(new.join_code) is None  # gone at once, before any clean-up
    with pytest.raises(cs.ClassNotFound):
        store.view(new.class_id)
    with pytest.raises(cs.NotTeacher):
        store.tally(new.teacher_key, "q:1")
    assert store.expire() == 1
    assert store.expire() == 0
    assert leftovers(store) == []


def test_the_lifetime_comes_from_the_environment(monkeypatch, tmp_path, clock, request):
    monkeypatch.setenv("ATTENTION_LAB_CLASS_HOURS", "0.5")
    short = make_backend("sqlite", tmp_path, clock, request)
    new = short.start_class()
    clock.now += 1799
    assert short.class_by_code(new.join_code) == new.class_id
    assert short.expire(now=clock.now + 1) == 1
    monkeypatch.setenv("ATTENTION_LAB_CLASS_HOURS", "four")
    with pytest.raises(ValueError, match="ATTENTION_LAB_CLASS_HOURS must be a number"):
        cs.class_hours()


def test_answers_from_many_threads_are_all_kept(store):
    new = store.start_class()
    members = [store.join(new.join_code, f"s{i}", client=f"10.0.0.{i}") for i in range(24)]

    def answer_all(part):
        for i, member in enumerate(part):
            for question in ("q:1", "q:2", "q:3"):
                assert store.answer(new.class_id, member.member_key, question, "AB"[i % 2])

    threads = [threading.Thread(target=answer_all, args=(members[i::6],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for question in ("q:1", "q:2", "q:3"):
        assert store.tally(new.teacher_key, question).answered == 24


def test_open_store_gives_one_store_per_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'a' / 'classes.sqlite'}"
    assert cs.open_store(url) is cs.open_store(url)
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", url)
    assert cs.open_store() is cs.open_store(url)
    monkeypatch.delenv("ATTENTION_LAB_CLASS_STORE")
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path / "data"))
    assert cs.default_url() == f"sqlite:///{tmp_path / 'data' / 'classes.sqlite'}"
    with pytest.raises(ValueError, match="must start with sqlite:///"):
        cs.open_store("postgres://somewhere")
    cs.open_store(url).close()


def test_sqlite_a_second_process_sees_the_same_class(tmp_path, request):
    store = make_backend("sqlite", tmp_path, time.time, request)  # two processes: real time
    new = store.start_class()
    script = ("import sys; sys.path.insert(0, sys.argv[1]);"
              "from teaching.class_store import make_store;"
              "s = make_store(sys.argv[2]); m = s.join(sys.argv[3], 'From afar');"
              "print(s.answer(s.class_by_code(sys.argv[3]), m.member_key, 'q:1', 'B'))")
    done = subprocess.run([sys.executable, "-c", script, str(ROOT),
                           f"sqlite:///{store.path}", new.join_code],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr
    assert store.tally(new.teacher_key, "q:1", with_names=True).names == {"B": ["From afar"]}


def test_sqlite_a_class_survives_a_restart(tmp_path, clock, request):
    store = make_backend("sqlite", tmp_path, clock, request)
    new = store.start_class()
    member = store.join(new.join_code, "Ann")
    store.set_view(new.teacher_key, "/heads")
    store.answer(new.class_id, member.member_key, "q:1", "A")
    store.close()
    again = make_backend("sqlite", tmp_path, clock, request)
    assert again.view(new.class_id).link == "/heads"
    assert again.set_view(new.teacher_key, "/attention") == 2
    assert again.tally(new.teacher_key, "q:1").counts == {"A": 1}
    assert again.answer(new.class_id, member.member_key, "q:1", "B")


def _join_in_child(store, code, results):
    results.put(store.join(code, "Forked").name)


def test_sqlite_a_forked_child_is_not_blocked_by_a_parents_lock(tmp_path, request):
    import multiprocessing

    store = make_backend("sqlite", tmp_path, time.time, request)
    new = store.start_class()
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_join_in_child, args=(store, new.join_code, results))
    try:
        with store._writing:  # a parent's thread in the middle of a write when it forks
            child.start()
            assert results.get(timeout=30) == "Forked"
    finally:
        child.join(timeout=5)
        if child.is_alive():
            child.kill()
    assert store.headcount(new.teacher_key).members == 1
