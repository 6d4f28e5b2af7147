"""The course as written (teaching/course/ and teaching/bundled/): every page that shows the
model opens in a step, every idea of the source notes is taught by a step, every question probes a named
misconception and every misconception is probed, every bundled lesson is in one unit, and the
course is as large as it promises. Every lesson loads and every fact in it resolves on its
model (tests/unit/test_lesson_claims.py checks each fact against an independent
computation)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from bundled_lessons import LESSONS, run_text
from teaching.format import LessonError, parse_lesson
from teaching.pages import LESSON_PAGES
from teaching.resolve import step_texts
from teaching.syllabus import COURSE, ideas, misconceptions, units

pytestmark = pytest.mark.unit

STEPS = [step for lesson in LESSONS for step in lesson.steps]
QUESTIONS = [step.question for step in STEPS if step.question is not None]
SEEDS = Path("/work/shared/seeds")
NOTES = ("000", "001", "002", "003", "004")  # the source notes' numbers (their README's table)


def test_every_page_that_shows_the_model_opens_in_a_step_most_in_three():
    opened = Counter(step.page for step in STEPS)
    assert set(LESSON_PAGES) - set(opened) == set(), "pages no step opens"
    assert sum(opened[p] >= 3 for p in LESSON_PAGES) > len(LESSON_PAGES) / 2, opened


def test_every_idea_of_the_notes_is_taught_by_a_step():
    taught = {idea for step in STEPS for idea in step.teaches}
    assert set(ideas()) - taught == set(), "ideas no step teaches"
    assert {idea.note for idea in ideas().values()} == set(NOTES)  # every note gives ideas


def test_every_question_probes_a_misconception_and_every_misconception_is_probed():
    untagged = [(lesson.id, i + 1) for lesson in LESSONS for i, step in enumerate(lesson.steps)
                if step.question is not None and not step.question.misconception]
    assert untagged == [], "questions with no misconception"
    probed = {q.misconception for q in QUESTIONS}
    assert set(misconceptions()) - probed == set(), "misconceptions no question probes"
    assert len(misconceptions()) >= 12


def test_the_course_is_as_large_as_it_promises():
    assert len(LESSONS) >= 20 and len(STEPS) >= 120 and len(QUESTIONS) >= 60


def test_every_bundled_lesson_is_in_exactly_one_unit_and_every_unit_lesson_exists():
    listed = [lesson for unit in units() for lesson in unit.lessons]
    assert sorted(listed) == sorted(lesson.id for lesson in LESSONS)
    assert len(units()) >= 10 and all(unit.title and unit.lessons for unit in units())


def test_the_course_lists_are_plain_words_with_unique_names():
    for table in ("ideas.toml", "misconceptions.toml"):
        names = re.findall(r'^id = "([^"]+)"', (COURSE / table).read_text(), re.MULTILINE)
        assert len(names) == len(set(names)), table
    for m in misconceptions().values():
        assert m.belief.endswith(".") and m.why.endswith(".") and len(m.why) < 300


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the source notes are not on this machine")
def test_the_ideas_name_the_notes_as_they_are_stored():
    stored = {p.name[:3] for p in SEEDS.glob("0*.txt")}
    assert set(NOTES) == stored


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_fact_of_the_lesson_resolves_on_its_model(lesson):
    for number, step in enumerate(lesson.steps, 1):
        if step.page == "training" and step.question is not None:
            continue  # its answer needs the training page's run (test_lesson_claims has it)
        settings, texts, _ = step_texts(step, run_text)
        assert all("{" not in v or "}" not in v for v in texts.values()), (lesson.id, number)


GOOD = """
title = "Tagged"
model = "minilm"
text = "The cat sat."

[[steps]]
title = "One"
page = "attention"
teaches = ["softmax-rows"]

[steps.question]
kind = "choice"
prompt = "What does a row add up to?"
options = ["one", "two"]
answer = "one"
misconception = "whole-matrix-sums"
"""


def test_a_step_names_its_ideas_and_a_question_its_misconception():
    lesson = parse_lesson(GOOD, "tagged")
    assert lesson.steps[0].teaches == ("softmax-rows",)
    assert lesson.steps[0].question.misconception == "whole-matrix-sums"
    plain = parse_lesson(GOOD.replace('teaches = ["softmax-rows"]\n', "").replace(
        'misconception = "whole-matrix-sums"\n', ""), "plain")
    assert plain.steps[0].teaches == () and plain.steps[0].question.misconception == ""


@pytest.mark.parametrize("old, new, said", [
    ('misconception = "whole-matrix-sums"', 'misconception = "rows-are-hard"',
     "misconception must be one of the course's names"),
    ('misconception = "whole-matrix-sums"', "misconception = 3",
     "misconception must be one of the course's names"),
    ('teaches = ["softmax-rows"]', 'teaches = ["softmax"]', "each idea in teaches must be one"),
    ('teaches = ["softmax-rows"]', 'teaches = "softmax-rows"', "teaches must be a list"),
    ('teaches = ["softmax-rows"]', "teaches = []", "teaches must be a list"),
])
def test_a_broken_tag_gets_a_message_naming_its_line(old, new, said):
    source = GOOD.replace(old, new)
    with pytest.raises(LessonError) as err:
        parse_lesson(source, "broken")
    line = source[:source.index(new)].count("\n") + 1
    assert said in str(err.value) and f"line {line}" in str(err.value)
