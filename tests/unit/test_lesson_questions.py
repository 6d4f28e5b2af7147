"""A lesson's questions. A step that asks "predict first" must not give its answer away before
the learner has guessed: not in its title, and it must not send the learner to a figure that is
still hidden (the figure of a choice question appears only with the answer). Once answered, the
question figure shows the row's real values, written at a readable size or not at all (the
hover has them), with room above its title for the toolbar; the feedback quotes the learner's
choice, escaped, and says its share plainly."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bundled_lessons import LESSONS, run_text as _runner
from teaching.resolve import step_texts
from ui.lesson_question import said_choice
from viz.lesson import MAX_WRITTEN, MIN_TEXT_PX, blind_heatmap, clicked_key

pytestmark = pytest.mark.unit

CHOICE_STEPS = [(lesson, i) for lesson in LESSONS for i, step in enumerate(lesson.steps)
                if step.question is not None and step.question.kind == "choice"
                and step.page != "training"]  # the training step's answer needs a training run
SMALL_WORDS = {"the", "a", "an", "of", "to", "it", "on", "in", "is", "and", "or"}


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


def test_the_learners_choice_is_quoted_escaped_and_said_plainly():
    assert said_choice({"picked": "the", "share": 0.0}) == "“the”, which gets 0% of the row"
    assert said_choice({"picked": "**bold** [x](y)", "share": None}) == (
        "“\\*\\*bold\\*\\* \\[x\\]\\(y\\)”")
    assert said_choice({"picked": "“x”", "share": None}) == "“x”"  # an option already quoted
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


def _shown(n: int):
    """An answered row of n keys with one "100%" square, the widest number."""
    tokens = ["[CLS]"] + [f"w{i}" for i in range(n - 2)] + ["[SEP]"]
    values = np.zeros(n)
    values[2] = 1.0  # a "100%" square: the widest number
    return blind_heatmap(tokens, 3, "Row", values)


def test_the_answered_rows_numbers_are_readable_or_absent():
    for n in (5, 9, 13, 18, 24, 30):
        fig = _shown(n)
        written = [t for t in fig.data[2].text[3] if t]
        if written:
            assert fig.data[2].textfont.size >= MIN_TEXT_PX >= 12, n
        else:
            assert "hover" in fig.layout.title.subtitle.text, n


def test_the_lesson_sentences_row_keeps_its_numbers_and_says_the_unit():
    fig = _shown(13)  # the lesson's sentence: 13 keys
    text = list(fig.data[2].text[3])
    assert all(text) and fig.data[2].textfont.size >= 12
    if not text[2].endswith("%"):  # the sign did not fit: the subtitle gives it
        assert "in %" in fig.layout.title.subtitle.text
    assert text[2].rstrip("%") == "100"
