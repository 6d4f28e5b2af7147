"""Lesson progress for the browser session: the steps finished and the questions answered right
the first time, shown on the lesson list; Finish ends on a summary of what the lesson covered
and the score, not on the list."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_lesson, page_text  # noqa: E402

from model import load_model  # noqa: E402
from teaching.facts import find_row  # noqa: E402

pytestmark = pytest.mark.app

TEXT = "The cat sat on the mat because it was warm."


def _answer_cell(at, right: bool):
    """Step 2 of lesson 1: the row of "sat", its brightest key or its dimmest."""
    row = load_model("minilm").run(TEXT).attentions[
        at.session_state["attn_layer"], at.session_state["attn_head"],
        find_row(load_model("minilm").run(TEXT).tokens, "sat")]
    return at.selectbox(key="lesson_cell_box").set_value(
        int(row.argmax() if right else row.argmin())).run()


def _next(at):
    return at.button(key="lesson_next_bottom").click().run()


def test_progress_shows_on_the_list_and_a_finished_lesson_ends_on_its_summary():
    at = open_lesson("reading-heatmaps", 1)
    at = _next(at)  # step 1 seen: no question
    at = _answer_cell(at, right=False)  # step 2: wrong first, then right
    at = _answer_cell(at, right=True)
    assert "Right" in page_text(at, ("success",))
    at = _next(at)
    at.radio(key="lesson_choice_reading-heatmaps_3").set_value("exactly one").run()
    at.button(key="lesson_check").click().run()  # step 3: right first time
    assert not at.exception, at.exception
    at.query_params.clear()  # the lesson list, as "See all lessons" opens it
    at.run()
    said = page_text(at, ("markdown",))
    assert "So far: 3 of 5 steps done · 1 of 2 right first time" in said, said
    assert at.button(key="lesson_start_reading-heatmaps").label == "Continue"
    at.button(key="lesson_start_reading-heatmaps").click().run()
    assert at.query_params["step"] in ("4", ["4"])  # on where the learner left off
    at = _next(at)  # step 5, the last
    at.button(key="lesson_finish_bottom").click().run()
    assert not at.exception, at.exception
    assert at.query_params["step"] in ("end", ["end"])
    assert [t.value for t in at.get("title")] == ["Lesson finished"]
    said = page_text(at, ("markdown",))
    assert "You went through **5 of 5** steps" in said
    assert "You answered **1 of 2** questions right the first time." in said
    assert "2. ✓ Rows look, columns are looked at · right after another try" in said, said
    assert "3. ✓ What does a row add up to? · right first time" in said
    assert not at.get("plotly_chart")  # a summary, not a step
    at.button(key="lesson_all").click().run()
    said = page_text(at, ("markdown",))
    assert "Reading an attention heatmap ✓" in said
    assert "**Finished**: 5 of 5 steps done · 1 of 2 right first time" in said
    assert at.button(key="lesson_start_reading-heatmaps").label == "Start again"


def test_a_question_answered_wrong_and_never_again_is_not_called_right():
    at = open_lesson("reading-heatmaps", 2)
    at = _answer_cell(at, right=False)  # wrong, and the learner moves on
    for _ in range(3):  # steps 3, 4 and 5
        at = _next(at)
    at.button(key="lesson_finish_bottom").click().run()
    assert not at.exception, at.exception
    said = page_text(at, ("markdown",))
    assert "2. ✓ Rows look, columns are looked at · not answered right" in said, said
    assert "right after another try" not in said, said


def test_an_unfinished_lesson_has_no_marks_and_its_summary_says_what_is_left():
    at = open_lesson("positions", 1)
    at.button(key="lesson_next_bottom").click().run()
    at.button(key="lesson_finish_bottom").click().run()  # step 2 left unanswered
    assert not at.exception, at.exception
    assert [t.value for t in at.get("title")] == ["End of the lesson"]
    said = page_text(at, ("markdown",))
    assert "You went through **1 of 2** steps" in said and "0 of 1" in said, said
    assert "2. ○ not finished: Learned positions · not answered" in said, said
    at.button(key="lesson_all").click().run()
    assert "Where am I? Positions ✓" not in page_text(at, ("markdown",))
    assert at.button(key="lesson_start_positions").label == "Continue"
