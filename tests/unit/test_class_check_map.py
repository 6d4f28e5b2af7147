"""The concept check in a live class (classroom/check_map.py): a simulated class of 30 answers
the first check, two lessons' questions and the second check on the real store (SQLite and a
real redis-server), with answers scripted beforehand so that the shares are known: some
misconceptions fixed by the lessons, some not, one made worse. The teacher's tallies give
the map and the CSV, which must equal the known shares exactly and hold nothing about who
answered."""

from __future__ import annotations

import csv
import io
from fractions import Fraction

import pytest

from classroom.check_map import (
    Share, item_rows, misconception_rows, moved_least, question_id, results_csv, share,
)
from class_stores import clock, make_backend, redis_url, store  # noqa: F401  (fixtures)
from teaching.class_store_base import RATE_WINDOW
from teaching.concept_check import FORMS, load_forms
from teaching.syllabus import misconceptions

STUDENTS = 30
FORMS_ = load_forms()
ITEMS = len(FORMS_["before"].steps)
# How many of the 30 are right on item i, before and after: known before anyone answers.
RIGHT = {"before": [(7 * i) % 19 for i in range(1, ITEMS + 1)],
         "after": [min(STUDENTS, (7 * i) % 19 + (11 if i % 3 else 0)) for i in range(1, ITEMS + 1)]}
RIGHT["after"][1] = RIGHT["before"][1] - 3  # one idea the lessons made worse
ANSWER = {form: {i: f"right answer {form} {i}" for i in range(1, ITEMS + 1)} for form in FORMS}


def _answer_all(store, clock, members, form: str) -> None:
    for item in range(1, ITEMS + 1):
        for n, m in enumerate(members):
            right = n < RIGHT[form][item - 1]
            choice = ANSWER[form][item] if right else f"wrong {n % 2}"
            assert store.answer(m.class_id, m.member_key, question_id(form, item), choice)
        clock.now += RATE_WINDOW  # ten answers a window per student, as the store allows


def _class_of_30(store, clock):
    new = store.start_class()
    members = []
    for n in range(STUDENTS):
        members.append(store.join(new.join_code, name=f"Student {n}", client=f"10.0.0.{n}"))
        if n % 25 == 24:
            clock.now += RATE_WINDOW  # joins per class per window
    return new, members


def test_a_simulated_class_gives_the_known_map_and_csv(store, clock):  # noqa: F811
    new, members = _class_of_30(store, clock)
    _answer_all(store, clock, members, "before")
    for lesson_question in ("u03-rows:2", "u05-positions:4"):  # two lessons' questions between
        for m in members:
            store.answer(m.class_id, m.member_key, lesson_question, "B")
        clock.now += RATE_WINDOW
    _answer_all(store, clock, members, "after")

    tallies = {form: {i: store.tally(new.teacher_key, question_id(form, i)).counts
                      for i in range(1, ITEMS + 1)} for form in FORMS}
    rows = item_rows(FORMS_, tallies, ANSWER)
    for r in rows:
        for form in FORMS:
            got = getattr(r, form)
            assert got.answered == STUDENTS
            assert Fraction(got.right, got.answered) == Fraction(RIGHT[form][r.item - 1], STUDENTS)
    # the map: each misconception's items added up, exactly
    tags = [s.question.misconception for s in FORMS_["before"].steps]
    for row in misconception_rows(rows):
        items = [i for i, t in enumerate(tags, 1) if t == row.misconception]
        assert row.items == tuple(items)
        for form in FORMS:
            want = sum(RIGHT[form][i - 1] for i in items)
            assert getattr(row, form) == Share(want, STUDENTS * len(items))
    assert {r.misconception for r in misconception_rows(rows)} == set(misconceptions())
    # the item the lessons made worse moved least
    assert moved_least(rows)[0].item == 2 and moved_least(rows)[0].moved < 0
    # the CSV: the same shares, no name and no member key anywhere in it
    text = results_csv(rows)
    table = list(csv.DictReader(io.StringIO(text)))
    assert len(table) == ITEMS
    for line, r in zip(table, rows):
        assert float(line["right before (%)"]) == pytest.approx(
            100 * RIGHT["before"][r.item - 1] / STUDENTS, abs=0.05)
        assert float(line["right after (%)"]) == pytest.approx(
            100 * RIGHT["after"][r.item - 1] / STUDENTS, abs=0.05)
        assert line["the mix-up it probes"] == misconceptions()[r.misconception].belief
    assert not any(m.name in text or m.member_key in text for m in members)
    assert "Student" not in text


def test_shares_of_nobody_and_of_a_question_not_asked_yet():
    assert Share().value is None and share({}, "x") == Share(0, 0)
    assert share({"x": 3, "y": 1}, "x").value == 0.75
    rows = item_rows(FORMS_, {"before": {1: {"a": 2}}}, {"before": {1: "a"}})
    assert rows[0].before == Share(2, 2) and rows[0].after == Share(0, 0)
    assert rows[0].moved is None and moved_least(rows) == []
    assert list(csv.reader(io.StringIO(results_csv(rows))))[2][2:] == ["", "0", "", "0"]
