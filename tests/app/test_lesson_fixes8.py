"""Review 8 (lessons), in the app: the wrong-answer feedback quotes the learner's choice and
says its share plainly; once answered, the question figure shows the row's real values (no
"values hidden" left); "Check my answer" cannot be pressed with nothing picked; the lesson list
names models as the sidebar does."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_lesson  # noqa: E402

from model import load_model  # noqa: E402
from teaching.facts import find_row  # noqa: E402
from ui.model_names import short_label  # noqa: E402
from ui.text import md_escape  # noqa: E402

pytestmark = pytest.mark.app

TEXT = "The cat sat on the mat because it was warm."


def _open(lesson_id: str | None = None, step: int = 1) -> AppTest:
    return open_lesson(lesson_id, step)


def _said(at: AppTest, kind: str) -> str:
    return " ".join(str(el.value) for el in at.get(kind))


def _question_figure(at: AppTest) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key == "lesson_cell_chart")
    return json.loads(chart.proto.spec)


def test_a_wrong_cell_answer_is_quoted_and_the_figure_shows_the_row():
    at = _open("reading-heatmaps", 2)
    assert not at.exception, at.exception
    layout = _question_figure(at)["layout"]
    assert "hidden" in layout["title"]["subtitle"]["text"]
    trace = load_model("minilm").run(TEXT)
    layer, head = at.session_state["attn_layer"], at.session_state["attn_head"]
    row = trace.attentions[layer, head, find_row(trace.tokens, "sat")]
    words = [j for j, t in enumerate(trace.tokens) if t.isalpha()]
    wrong = min(words, key=lambda j: float(row[j]))  # a word, as the reviewer picked "the"
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
    at = _open("reading-heatmaps", 3)
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
    at = _open("reading-heatmaps", 3)
    at.radio(key="lesson_choice_reading-heatmaps_3").set_value("exactly one").run()
    at.button(key="lesson_check").click().run()
    assert not at.exception, at.exception
    said = _said(at, "success")
    assert "all 936 rows add up to 1.00" in said and "1.0000" not in said, said


def test_the_lesson_list_names_models_as_the_sidebar_does():
    at = _open()
    assert not at.exception, at.exception
    captions = _said(at, "caption")
    for model in ("minilm", "tiny-induction", "tiny-reverse"):  # escaped: Markdown source
        assert md_escape(short_label(model)) in captions, (model, captions)
    assert "minilm" not in captions  # the id, nowhere without its label
    for model in ("tiny-induction", "tiny-reverse"):
        assert captions.count(md_escape(model)) == captions.count(md_escape(short_label(model)))


def test_a_lesson_sentence_names_the_model_as_the_app_does():
    at = _open("reading-heatmaps", 4)
    assert not at.exception, at.exception
    said = _said(at, "markdown")
    assert "Each layer of MiniLM has" in said, said
