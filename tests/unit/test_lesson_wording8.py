"""Review 8 (lessons): the numbers in a lesson's sentences read as a learner would say them
("all 936 rows add up to 1.00", never "between 1.0000 and 1.0000"), a model is named as the
app names it, the learner's choice is quoted in the feedback, and the question figure shows
the row's real values once answered, with room above its title for the toolbar."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest

from model import load_model
from teaching.facts import rows_summary
from teaching.format import parse_lesson
from teaching.resolve import step_texts
from ui.lesson_question import said_choice
from ui.lesson_step import shown_name
from viz.lesson import MAX_WRITTEN, blind_heatmap, clicked_key

pytestmark = pytest.mark.unit

BUNDLED = sorted((Path(__file__).resolve().parents[2] / "teaching" / "bundled").glob("*.toml"))
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in BUNDLED]
STEPS = [(lesson, i) for lesson in LESSONS for i, step in enumerate(lesson.steps)
         if step.page != "training"]  # the training step's facts need a training run


@functools.cache
def _model(name: str):
    return load_model(name)


def _runner(name: str, text: str, pair: str):
    return _model(name), _model(name).run(text, pair or None)


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


def test_the_learners_choice_is_quoted_escaped_and_said_plainly():
    assert said_choice({"picked": "the", "share": 0.0}) == "“the”, which gets 0% of the row"
    assert said_choice({"picked": "**bold** [x](y)", "share": None}) == (
        "“\\*\\*bold\\*\\* \\[x\\]\\(y\\)”")
    odd = said_choice({"picked": "é\u200b$x$", "share": 0.456})
    assert odd == "“é\u200b\\$x\\$”, which gets 46% of the row"


def test_the_question_figure_shows_the_rows_values_once_answered():
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    hidden = blind_heatmap(tokens, 3, "Row of “sat”")
    assert "hidden" in hidden.layout.title.subtitle.text
    assert len(hidden.data) == 2
    values = np.array([0.1, 0.05, 0.7, 0.1, 0.05])
    shown = blind_heatmap(tokens, 3, "Row of “sat”", values)
    assert "hidden" not in shown.layout.title.subtitle.text
    grid = np.array(shown.data[2].z, dtype=float)
    assert np.allclose(grid[3], values) and np.isnan(grid[0]).all()
    assert list(shown.data[2].text[3]) == ["10%", "5%", "70%", "10%", "5%"]
    point = {"curve_number": 1, "customdata": list(shown.data[1].customdata[2])}
    assert clicked_key([point]) == 2  # a click still names the key
    many = ["t"] * (MAX_WRITTEN + 1)
    crowded = blind_heatmap(many, 0, "Row", np.full(len(many), 1 / len(many)))
    assert not any(crowded.data[2].text[0])  # squares too small for their numbers
    with pytest.raises(ValueError):
        blind_heatmap(tokens, 3, "Row", values[:3])


def test_the_question_title_sits_clear_of_the_toolbar():
    fig = blind_heatmap(["a", "b"], 0, "Row of “a”: which key gets the most attention?")
    assert fig.layout.margin.t >= 100
    title = fig.layout.title
    assert (title.yref, title.y, title.yanchor) == ("container", 1, "top")
    assert 30 <= title.pad.t < fig.layout.margin.t - 40  # below the toolbar, above the plot
