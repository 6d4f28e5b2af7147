"""AppTest: the real app script, driven by widget keys, with the bundled MiniLM."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_files import page_names  # noqa: E402
from page_links import open_link, switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 120
ATTENTION = "attention"


DECODER_ONLY = ("logit_lens", "generate", "attribution")


def _charts(at: AppTest) -> dict[str, dict]:
    return {el.key or str(i): json.loads(el.proto.spec)
            for i, el in enumerate(at.get("plotly_chart"))}


def _heatmap(at: AppTest) -> dict:
    return _charts(at)["attn_heatmap"]


def test_default_view_has_heatmap_and_no_exception():
    at = open_link(ATTENTION, TIMEOUT)
    assert not at.exception
    fig = _heatmap(at)
    assert "layer 0, head 0" in fig["layout"]["title"]["text"].lower()
    assert fig["data"][0]["type"] == "heatmap"


def test_sliders_change_the_figure():
    at = open_link(ATTENTION, TIMEOUT)
    before = _heatmap(at)["data"][0]["z"]
    at.slider(key="attn_head").set_value(3).run()
    assert not at.exception
    after = _heatmap(at)
    assert "head 3" in after["layout"]["title"]["text"]
    assert after["data"][0]["z"] != before
    at.slider(key="attn_layer").set_value(5).run()
    assert "layer 5" in _heatmap(at)["layout"]["title"]["text"].lower()
    assert at.query_params["layer"] == ["5"] or at.query_params["layer"] == "5"


def test_typing_text_changes_tokens():
    at = open_link(ATTENTION, TIMEOUT)
    at.text_area(key="sb_text").input("Zebras graze quietly.").run()
    assert not at.exception
    x = _heatmap(at)["data"][0]["x"]
    assert any("zebra" in str(label) for label in x)


def test_average_rollout_and_hide_special():
    at = open_link(ATTENTION, TIMEOUT)
    at.toggle(key="attn_average").set_value(True).run()
    assert "average" in _heatmap(at)["layout"]["title"]["text"].lower()
    at.radio(key="attn_mode").set_value("Attention rollout").run()
    assert not at.exception
    assert "rollout" in _heatmap(at)["layout"]["title"]["text"].lower()
    at.toggle(key="attn_hide_special").set_value(True).run()
    assert not at.exception
    labels = _heatmap(at)["data"][0]["x"]
    assert not any("[CLS]" in str(l) or "[SEP]" in str(l) for l in labels)


@pytest.mark.parametrize("text", [
    "", "   \n\t ", "😀🚀 émoji", "日本語のテキスト", "שלום עולם مرحبا", "zero\u200bwidth\u200d",
    "ctrl\x00\x07\x1bchars", "<script>alert(1)</script>", '<img src=x onerror="alert(1)">',
    "**bold** [link](http://example.com) # heading", "$\\frac{1}{0}$ and $$x$$",
])
def test_hostile_text_never_raises(text):
    at = open_link(ATTENTION, TIMEOUT)
    at.text_area(key="sb_text").input(text).run()
    assert not at.exception
    if not text.strip():
        assert any("type some text" in el.value.lower() for el in at.info)


def test_long_text_is_cut_with_a_message():
    at = open_link(ATTENTION, TIMEOUT)
    at.text_area(key="sb_text").input("word " * 2000).run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "dropped" in warnings and "512" in warnings


def test_broken_model_directory_gives_a_message(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    at = open_link(ATTENTION, TIMEOUT)
    at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
    at.text_input(key="sb_model_other").input(str(tmp_path)).run()
    assert not at.exception
    assert any("could not load" in e.value.lower() for e in at.sidebar.error)
    at.selectbox(key="sb_model_choice").set_value("minilm").run()
    assert not at.exception
    assert _heatmap(at)["data"][0]["type"] == "heatmap"


def test_svg_download_switch_reaches_every_figure_toolbar():
    at = open_link(ATTENTION, TIMEOUT)

    def formats() -> set[str]:
        return {json.loads(el.proto.config)["toImageButtonOptions"]["format"]
                for el in at.get("plotly_chart")}

    assert formats() == {"png"}
    at.radio(key="sb_image_format").set_value("SVG").run()
    assert not at.exception
    assert formats() == {"svg"}
    assert len(at.get("plotly_chart")) >= 2  # the heatmap and the overview at least


def test_each_detail_view_draws_its_own_figure_for_the_selected_head():
    at = open_link(ATTENTION, TIMEOUT)
    assert "attn_overview" in _charts(at) and "attn_qk" not in _charts(at)
    # "All heads" shows the overview only: the downloads belong to the Download view (before
    # the restructure they did; the restructure's dead-code cut let them show here too)
    assert not at.get("download_button")

    at.segmented_control(key="attn_view").set_value("Token lines").run()
    assert not at.exception
    assert "attn_overview" not in _charts(at)
    lines = [c for c in at.get("bidi_component") if c.proto.id.endswith("attn_lines")]
    assert len(lines) == 1 and json.loads(lines[0].proto.json)["lines"]  # the line view

    at.segmented_control(key="attn_view").set_value("Where a row comes from (Q·K)").run()
    qk_head0 = json.dumps(_charts(at)["attn_qk"]["data"])
    at.slider(key="attn_head").set_value(4).run()
    assert not at.exception
    assert json.dumps(_charts(at)["attn_qk"]["data"]) != qk_head0  # follows the head slider

    at.segmented_control(key="attn_view").set_value("Download").run()
    assert not at.exception
    csv = at.get("download_button")[0]
    assert csv.proto.label.startswith("Attention matrix")


@pytest.mark.parametrize("page", page_names())
def test_every_page_figure_saves_the_format_chosen_in_the_sidebar(page):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    switch(at, ATTENTION)
    if page in DECODER_ONLY:  # an encoder gets a line and a switch there: draw with a decoder
        at.query_params["model"] = "tiny-chars"
    at.run()
    at.radio(key="sb_image_format").set_value("SVG").run()
    switch(at, page).run()
    assert not at.exception
    formats = [json.loads(el.proto.config).get("toImageButtonOptions", {}).get("format")
               for el in at.get("plotly_chart")]
    assert all(f == "svg" for f in formats), (page, formats)
    # training draws once a run starts; the lessons list and the teach page are words and
    # buttons; the start page draws its one small heatmap with Vega-Lite, not plotly; joining
    # a class is a form; the walkthrough opens on the tokens table (its figures come later)
    assert formats or page in ("training", "lessons", "teach", "start", "join",
                               "walkthrough"), page


def test_encoder_decoder_shows_its_cross_attention():
    from model import load_model

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    switch(at, ATTENTION)
    at.query_params["model"] = "tiny-reverse"
    at.query_params["text"] = "softmax"
    at.run()
    assert not at.exception
    charts = _charts(at)
    assert "attn_cross" in charts
    trace = load_model("tiny-reverse").run("softmax")
    layer = trace.dec_cfg.n_layers - 1
    shown = charts["attn_cross"]["data"][0]
    assert "decoder layer" in charts["attn_cross"]["layout"]["title"]["text"]
    assert len(shown["x"]) == len(trace.tokens)  # columns: the source tokens
    assert len(shown["y"]) == trace.cross_attentions.shape[-2]  # rows: the output steps
    assert trace.outputs[0] in " ".join(m.value for m in at.caption)
    at.slider(key="attn_cross_layer").set_value(0).run()
    assert "decoder layer 0" in _charts(at)["attn_cross"]["layout"]["title"]["text"]
    assert layer >= 1
