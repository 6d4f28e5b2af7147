"""A lesson step shows the step, not the tool: its words, its question and the one figure it is
about (no page title, no sliders, no other chart), with "Open the full page", which opens that
page in the step's view. Lesson 1 counts the text's tokens truly, its markers included."""

from __future__ import annotations

import json
import os
from urllib.parse import parse_qsl, urlsplit

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_lesson, open_view, page_text  # noqa: E402

from model import load_model  # noqa: E402
from ui.view_state import ViewState  # noqa: E402

pytestmark = pytest.mark.app

TEXT = "The cat sat on the mat because it was warm."


def _figure(at, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


def test_a_step_draws_one_figure_and_no_controls_and_its_link_opens_the_full_page():
    at = open_lesson("reading-heatmaps", 1)
    assert not at.exception, at.exception
    assert [c.key for c in at.get("plotly_chart")] == ["attn_heatmap"]
    assert not at.get("slider") and not at.get("title")  # the page's controls and title stay out
    trace = load_model("minilm").run(TEXT)
    prev = trace.attentions.double().diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)
    layer, head = divmod(int(prev.argmax()), prev.shape[1])  # the step's {prev.layer}, {prev.head}
    title = _figure(at, "attn_heatmap")["layout"]["title"]["text"]
    assert title.startswith(f"Layer {layer}, head {head}"), title
    button = next(b for b in at.get("link_button") if "full page" in b.label)
    parts = urlsplit(button.proto.url)
    view = ViewState.from_link(parts.path.strip("/"), dict(parse_qsl(parts.query)))
    assert (view.page, view.model, view.text) == ("attention", "minilm", TEXT)
    assert (view.settings["layer"], view.settings["head"]) == (layer, head)
    full = open_view(view)
    assert (full.session_state["attn_layer"], full.session_state["attn_head"]) == (layer, head)
    assert full.slider(key="attn_layer").value == layer  # the whole page, with its controls
    assert _figure(full, "attn_heatmap")["layout"]["title"]["text"] == title


def test_a_step_names_its_figure_the_cross_attention_one():
    at = open_lesson("cross-attention", 2)
    assert not at.exception, at.exception
    assert [c.key for c in at.get("plotly_chart")] == ["attn_cross"]
    assert "Cross-attention, decoder layer" in _figure(at, "attn_cross")["layout"]["title"]["text"]


def test_the_figure_waits_for_the_answer_beside_the_question():
    at = open_lesson("reading-heatmaps", 3)
    assert not at.exception
    assert not at.get("plotly_chart") and not [b for b in at.get("link_button")
                                                if "full page" in b.label]
    assert "The figure appears here once you have answered." in page_text(at, ("caption",))
    at.radio(key="lesson_choice_reading-heatmaps_3").set_value("exactly one").run()
    at.button(key="lesson_check").click().run()
    assert [c.key for c in at.get("plotly_chart")] == ["attn_heatmap"]


def test_lesson_one_counts_its_tokens_with_the_markers_among_them():
    at = open_lesson("reading-heatmaps", 1)
    said = page_text(at, ("markdown",))
    trace = load_model("minilm").run(TEXT)
    markers = int(trace.special_mask[0].sum())
    n = len(trace.tokens)
    assert f"here {n} of them: {n - markers} pieces of the sentence, and {markers} markers" \
        in said, said
    assert "also adds" not in said


def test_lesson_one_adds_up_a_row_that_is_spread_out():
    at = open_lesson("reading-heatmaps", 3)
    at.radio(key="lesson_choice_reading-heatmaps_3").set_value("exactly one").run()
    at.button(key="lesson_check").click().run()
    layer, head = at.session_state["attn_layer"], at.session_state["attn_head"]
    a = load_model("minilm").run(TEXT).attentions[layer, head].double()  # [q_pos, k_pos]
    assert float(a[1:-1].max(-1).values.max()) < 0.5  # no word's row is one square and zeros
    said = page_text(at, ("success",))
    assert "biggest squares hold" in said and "in all" in said, said


def test_a_training_step_starts_its_tasks_run_at_the_shipped_size():
    from server.training_runs import DEFAULT_SNAPSHOT_EVERY

    at = open_lesson("cross-attention", 3)
    assert not at.exception, at.exception
    assert at.button(key="train_start").label == "Start training"
    at.button(key="train_start").click().run()
    assert not at.exception, at.exception
    run = at.session_state["train_run"]
    try:
        assert run.task.key == "reverse"  # the step's task, not the page's default
        assert run.settings.snapshot_every == DEFAULT_SNAPSHOT_EVERY
        assert "train_every" not in at.session_state  # the page's own slider keeps its default
    finally:
        run.discard()
