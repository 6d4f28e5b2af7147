"""A lesson step that asks "predict first" must not give its answer away before the learner
has guessed: not in its title, and it must not send the learner to a figure that is still
hidden (the figure of a choice question appears only with the answer)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from model import load_model
from teaching.format import parse_lesson
from teaching.resolve import step_texts

pytestmark = pytest.mark.unit

BUNDLED = sorted((Path(__file__).resolve().parents[2] / "teaching" / "bundled").glob("*.toml"))
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in BUNDLED]
CHOICE_STEPS = [(lesson, i) for lesson in LESSONS for i, step in enumerate(lesson.steps)
                if step.question is not None and step.question.kind == "choice"
                and step.page != "training"]  # the training step's answer needs a training run
SMALL_WORDS = {"the", "a", "an", "of", "to", "it", "on", "in", "is", "and", "or"}


@functools.cache
def _model(name: str):
    return load_model(name)


def _runner(name: str, text: str, pair: str):
    return _model(name), _model(name).run(text, pair or None)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+|\d+", text.lower()) if w not in SMALL_WORDS}


def test_there_are_choice_questions_to_check():
    assert any(lesson.id == "reading-heatmaps" for lesson, _ in CHOICE_STEPS)


@pytest.mark.parametrize("lesson,i", CHOICE_STEPS, ids=lambda x: x if isinstance(x, int)
                         else x.id)
def test_a_choice_step_does_not_give_its_answer_away_before_the_guess(lesson, i):
    step = lesson.steps[i]
    _, texts, _ = step_texts(step, _runner)
    answer = _words(texts["answer"])
    assert answer, texts["answer"]
    shared = answer & _words(texts["title"])
    assert not shared, f"{lesson.id} step {i + 1}: the title {texts['title']!r} says {shared}"
    # The figure stays hidden until the learner answers: no "hover over it" before that.
    for part in ("title", "explain", "prompt"):
        assert "hover" not in texts[part].lower(), f"{lesson.id} step {i + 1}: {part}"


def test_reading_heatmaps_asks_what_a_row_adds_up_to_and_says_hover_in_the_reveal():
    lesson = next(lesson for lesson in LESSONS if lesson.id == "reading-heatmaps")
    step = next(s for s in lesson.steps if s.question is not None and s.question.kind == "choice")
    assert step.title.endswith("?")
    assert "hover" in step.question.reveal.lower()
    assert "adds up to one" not in lesson.summary
