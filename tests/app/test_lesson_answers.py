"""Answering a lesson's question on the lessons page: a wrong answer's feedback quotes the
learner's choice and says its share plainly; once answered, the question figure shows the row's
real values (no "values hidden" left); "Check my answer" cannot be pressed with nothing picked;
a right answer says the row sums in plain numbers."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_lesson, page_text  # noqa: E402

from model import load_model  # noqa: E402
from teaching.facts import find_row  # noqa: E402

pytestmark = pytest.mark.app

TEXT = "The cat sat on the mat because it was warm."


def _said(at, kind: str) -> str:
    return page_text(at, (kind,), unescape=False)


def _question_figure(at) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key == "lesson_cell_chart")
    return json.loads(chart.proto.spec)


def test_a_wrong_cell_answer_is_quoted_and_the_figure_shows_the_row():
    at = open_lesson("reading-heatmaps", 2)
    assert not at.exception, at.exception
    layout = _question_figure(at)["layout"]
    assert "hidden" in layout["title"]["subtitle"]["text"]
    trace = load_model("minilm").run(TEXT)
    layer, head = at.session_state["attn_layer"], at.session_state["attn_head"]
    row = trace.attentions[layer, head, find_row(trace.tokens, "sat")]
    words = [j for j, t in enumerate(trace.tokens) if t.isalpha()]
    wrong = min(words, key=lambda j: float(row[j]))  # a word, as a learner might pick "the"
    assert float(row[wrong]) < float(row.max())
    at.selectbox(key="lesson_cell_box").set_value(wrong).run()
    assert not at.exception, at.exception
    word = trace.tokens[wrong].lower()
    said = _said(at, "warning")
    assert f"you chose “{word}”, which gets {float(row[wrong]):.0%} of the row" in said, said
    figure = _question_figure(at)
    assert "hidden" not in figure["layout"]["title"]["subtitle"]["text"]
    shown = [t for t in figure["data"] if t.get("type") == "heatmap" and t.get("text")]
    assert shown, "the row's values are not in the question figure"


def test_check_my_answer_waits_for_a_pick():
    at = open_lesson("reading-heatmaps", 3)
    assert not at.exception, at.exception
    check = at.button(key="lesson_check")
    assert check.disabled
    assert "Pick one answer first" in _said(at, "info")
    box = at.radio(key="lesson_choice_reading-heatmaps_3")
    box.set_value(box.options[1]).run()
    assert not at.button(key="lesson_check").disabled
    at.button(key="lesson_check").click().run()
    said = _said(at, "warning")
    assert f"you chose “{box.options[1]}”" in said, said
    assert "between 1.0000" not in _said(at, "markdown")


def test_a_right_choice_shows_the_row_sums_in_plain_numbers():
    at = open_lesson("reading-heatmaps", 3)
    at.radio(key="lesson_choice_reading-heatmaps_3").set_value("exactly one").run()
    at.button(key="lesson_check").click().run()
    assert not at.exception, at.exception
    said = _said(at, "success")
    assert "all 936 rows add up to 1.00" in said and "1.0000" not in said, said
