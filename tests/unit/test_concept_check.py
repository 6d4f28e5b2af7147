"""The concept check's two forms (teaching/course/checks/): parallel forms of at least 12
items that probe every misconception, item i of both on the same misconception with the same
kind of question and never on a shared text; every right answer, on each form's own text,
resolves and agrees with an independent computation (tests/unit/test_lesson_claims.py's);
a broken form is refused with a message naming its line."""

from __future__ import annotations

import dataclasses
import re
import shutil

import pytest

from bundled_lessons import LESSONS, default_induction, run_text
from teaching.concept_check import (
    CHECKS, MIN_ITEMS, CheckError, answer_facts, learner_map, load_forms, pair_problems,
    read_form, teaching_steps,
)
from teaching.facts import ROSE
from teaching.format import PLACEHOLDER
from teaching.resolve import step_parts
from teaching.syllabus import misconceptions
from test_lesson_claims import verify_step

pytestmark = pytest.mark.unit

FORMS = load_forms()
BEFORE, AFTER = FORMS["before"], FORMS["after"]
ITEMS = range(1, len(BEFORE.steps) + 1)


def test_the_two_forms_are_parallel_and_probe_every_misconception():
    assert len(BEFORE.steps) == len(AFTER.steps) >= MIN_ITEMS
    for form in (BEFORE, AFTER):
        probed = {s.question.misconception for s in form.steps}
        assert probed == set(misconceptions())
    for b, a in zip(BEFORE.steps, AFTER.steps):
        assert (b.question.misconception, b.question.kind) == (a.question.misconception,
                                                               a.question.kind)
    assert not {s.text for s in BEFORE.steps} & {s.text for s in AFTER.steps}
    assert pair_problems(BEFORE, AFTER) == []


def test_each_item_asks_on_another_text_or_model_or_another_fact_of_one_training_run():
    """Item i of the two forms differs in what its answer is computed from: another text or
    model; the training item asks another question of the training page's one run."""
    for number, (b, a), (fb, fa) in zip(ITEMS, zip(BEFORE.steps, AFTER.steps),
                                        zip(answer_facts(BEFORE), answer_facts(AFTER))):
        assert fb and fa, f"question {number}: the right answer must be a computed fact"
        if b.page == "training":
            assert b.question.answer != a.question.answer, number
        else:
            assert (b.model, b.text) != (a.model, a.text), number


def _shifted(lesson, change: dict[int, dict]):
    """The form with step i's fields changed as `change[i]` says."""
    return dataclasses.replace(lesson, steps=tuple(
        dataclasses.replace(s, **change.get(i, {})) for i, s in enumerate(lesson.steps)))


def _question(step, **change):
    return {"question": dataclasses.replace(step.question, **change)}


@pytest.mark.parametrize("what, before, after, said", [
    ("too few items", lambda b: dataclasses.replace(b, steps=b.steps[:MIN_ITEMS - 1]),
     lambda a: dataclasses.replace(a, steps=a.steps[:MIN_ITEMS - 1]), "it needs at least"),
    ("a misconception no item probes",
     lambda b: _shifted(b, {0: _question(b.steps[0], misconception="sees-the-future")}),
     lambda a: _shifted(a, {0: _question(a.steps[0], misconception="sees-the-future")}),
     "probes no question on: words-are-tokens"),
    ("another misconception at the same place",
     lambda b: b,
     lambda a: _shifted(a, {1: _question(a.steps[1], misconception="layers-replace")}),
     "question 2 must probe the same misconception"),
    ("another kind at the same place",
     lambda b: b, lambda a: _shifted(a, {2: _question(a.steps[2], kind="cell")}),
     "question 3 must probe the same misconception with the same kind"),
    ("a shared text", lambda b: b, lambda a: _shifted(a, {3: {"text": BEFORE.steps[0].text}}),
     "the two checks share a text"),
    ("an untagged question", lambda b: b,
     lambda a: _shifted(a, {4: _question(a.steps[4], misconception="")}),
     "needs a question that names the misconception"),
])
def test_forms_that_are_not_parallel_are_refused(what, before, after, said):
    problems = pair_problems(before(BEFORE), after(AFTER))
    assert any(said in p for p in problems), (what, problems)


def test_the_forms_type_no_numbers():
    for form in (BEFORE, AFTER):
        for step in form.steps:
            for text in [form.title, form.summary, *step_parts(step).values()]:
                assert not re.search(r"\d", PLACEHOLDER.sub("", text)), text


@pytest.fixture(scope="module")
def induction():
    return default_induction()


@pytest.mark.parametrize("number", ITEMS, ids=lambda n: f"item-{n}")
def test_both_forms_answer_from_their_own_text_and_agree_with_an_independent_computation(
        number, induction):
    for form in (BEFORE, AFTER):
        facts = verify_step(form.steps[number - 1], run_text, induction)
        if "induction" in facts:
            _verify_how_it_rose(facts["induction"])


def _verify_how_it_rose(fact: dict) -> None:
    """The score's rise by hand: of every stretch of at most a fifth of the run, the one that
    rose most, against half of the whole rise."""
    scores, steps = fact["scores"], fact["steps"]
    total = scores[-1][1] - scores[0][1]
    best = 0.0
    for s, a in scores:
        later = [b for t, b in scores if s < t <= s + steps / 5]
        best = max([best] + [b - a for b in later])
    assert fact["how"] == (ROSE[0] if total > 0 and best >= total / 2 else ROSE[1])


def test_every_misconception_links_the_first_course_step_that_probes_it():
    lessons = {lesson.id: lesson for lesson in LESSONS}
    steps = teaching_steps(lessons)
    assert set(steps) == set(misconceptions())
    for tag, (lesson_id, number) in steps.items():
        assert lessons[lesson_id].steps[number - 1].question.misconception == tag
    rows = learner_map(FORMS, {"before": {n: n % 2 == 0 for n in ITEMS}}, lessons)
    for row in rows:
        item = next(n for n, s in enumerate(BEFORE.steps, 1)
                    if s.question.misconception == row.misconception)
        assert row.before == (item % 2 == 0) and row.after is None and row.held == row.before


@pytest.mark.parametrize("old, new, said", [
    ('misconception = "words-are-tokens"', 'misconception = "words"',
     "misconception must be one of the course's names"),
    ('answer = "{run.tokens}"', 'answer = "{run.nothing}"', "the fact “run” has"),
    ("[[steps]]", "[[steps]\n", "this is not valid TOML"),
])
def test_a_broken_form_gets_a_message_naming_its_line(tmp_path, old, new, said):
    shutil.copy(CHECKS / "after.toml", tmp_path / "after.toml")
    source = (CHECKS / "before.toml").read_text()
    (tmp_path / "before.toml").write_text(source.replace(old, new, 1))
    with pytest.raises(CheckError) as err:
        load_forms(tmp_path)
    line = source[:source.index(old)].count("\n") + 1
    assert said in str(err.value) and f"line {line}" in str(err.value), str(err.value)
    assert str(err.value).startswith("the first check")


def test_a_missing_form_is_said_in_words(tmp_path):
    with pytest.raises(CheckError, match="the second check cannot be read"):
        read_form("after", tmp_path)
