"""The numbers and names in a lesson's sentences read as a learner would say them: row sums
as "all 936 rows add up to 1.00" (never "between 1.0000 and 1.0000"), no over-precise numbers
in any bundled step, and a model named as the app names it ("MiniLM", not its id)."""

from __future__ import annotations

import re

import pytest

from bundled_lessons import LESSONS, run_text as _runner
from teaching.facts import rows_summary
from teaching.resolve import step_texts
from ui.lesson_step import shown_name

pytestmark = pytest.mark.unit

STEPS = [(lesson, i) for lesson in LESSONS for i, step in enumerate(lesson.steps)
         if step.page != "training"]  # the training step's facts need a training run


def test_row_sums_say_between_only_when_the_ends_differ_at_two_decimals():
    assert rows_summary(936, 0.9999999, 1.0000001) == "all 936 rows add up to 1.00"
    assert rows_summary(1200, 0.98, 1.02) == "the 1,200 rows add up to between 0.98 and 1.02"


@pytest.mark.parametrize("lesson,i", STEPS, ids=lambda x: x if isinstance(x, int) else x.id)
def test_no_bundled_step_says_a_number_a_learner_would_trip_on(lesson, i):
    _, texts, _ = step_texts(lesson.steps[i], _runner, label=shown_name)
    said = " ".join(texts.values())
    assert not re.search(r"\d\.\d{3,}", said), f"{lesson.id} {i + 1}: over-precise: {said}"
    same = re.search(r"between (\S+) and (\S+)", said)
    assert not same or same.group(1) != same.group(2).rstrip(",."), said
    assert "at least 100%" not in said and "minilm" not in said, said


def test_reading_heatmaps_row_sums_and_model_name_read_plainly():
    lesson = next(lesson for lesson in LESSONS if lesson.id == "reading-heatmaps")
    _, reveal, _ = step_texts(lesson.steps[2], _runner, label=shown_name)
    assert "all 936 rows add up to 1.00" in reveal["reveal"], reveal["reveal"]
    _, heads, _ = step_texts(lesson.steps[3], _runner, label=shown_name)
    assert "Each layer of MiniLM has 12 heads" in heads["explain"], heads["explain"]
    _, raw, _ = step_texts(lesson.steps[3], _runner)  # without a label: the model's id
    assert "Each layer of minilm" in raw["explain"]
