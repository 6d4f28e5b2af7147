"""Review 8a, findings 1, 2, 13, 14, 15 and 11 (block maxima): the compare page's default text
B on a text longer than the context, B = A, the swap named and zoomed; the attention page on
a model with no Hugging Face counterpart and no special tokens, and on a long text."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from analysis.head_stats import head_statistics  # noqa: E402
from ui.examples import LONG  # noqa: E402
from chart_data import chart_specs as _charts, plotly_array as _array  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
COMPARE, ATTENTION = "app_pages/compare.py", "app_pages/attention.py"
DECLONG = ("The old lighthouse keeper climbed the stairs every evening to light the lamp. The "
           "sea was loud and the wind was cold, and far away a ship was looking for the harbour "
           "in the dark. He thought about his daughter, who lived in the city now, and about "
           "the long winter that was coming.")


def _app(page: str, model: str | None = None, text: str | None = None,
         params: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    if params:
        at.query_params.update(params)
    at.run()
    if model is not None:
        at.selectbox(key="sb_model_choice").set_value(model).run()
    if text is not None:
        at.text_area(key="sb_text").input(text).run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def _texts(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in ("caption", "info", "markdown", "warning")
                    for e in at.get(kind))


@pytest.fixture(scope="module")
def declong_compare():
    return _app(COMPARE, "tiny-chars", DECLONG)


def test_compare_swaps_a_word_the_model_reads_on_a_text_longer_than_its_context(
        declong_compare):
    at = declong_compare
    text_b = at.text_area(key="cmp_text_b").value
    assert text_b != DECLONG and text_b.endswith(DECLONG[-80:])  # the swap is near the start
    charts = _charts(at)
    diff = _array(charts["cmp_diff"]["data"][0]["z"])
    assert np.nanmax(np.abs(diff)) > 0  # something moves on the first view
    text = _texts(at)
    assert "“old” → “red”" in text  # the swap, named from the two runs
    assert "Like A, B runs on its first 64 tokens" in text
    assert not [w for w in at.warning if "Text B is longer" in w.value]  # no second warning
    heat = charts["cmp_heads"]["data"][0]
    assert heat["zmin"] == 0 and heat["zmax"] > 0  # |B − A| never goes below 0


def test_compare_b_equal_to_a_draws_no_figures(declong_compare):
    at = declong_compare
    at.button(key="cmp_copy").click().run()
    assert not at.exception
    assert "B is the same as A: change a word in B to see what moves." in _texts(at)
    assert not _charts(at)  # no grey triangle, no grid of zeros
    at.text_area(key="cmp_text_b").input(DECLONG + " And more words after the cut.").run()
    assert not at.exception
    assert "only after the first 64 tokens" in _texts(at) and not _charts(at)


def test_compare_names_and_zooms_on_the_swap_in_a_long_text():
    at = _app(COMPARE, text=LONG)
    text = _texts(at)
    assert "token 7\\: “sentence” → “paragraph”" in text  # [CLS] is token 0 (":" escaped)
    layout = _charts(at)["cmp_diff"]["layout"]
    first, last = layout["xaxis"]["range"]
    assert first == -0.5 and last == pytest.approx(7 + 15 + 0.5)  # ±15 tokens around token 7
    assert layout["xaxis"]["showticklabels"]  # the zoomed tokens are labelled
    subtitle = layout["title"]["subtitle"]["text"].replace("<br>", " ")
    assert "double-click to see all 325" in subtitle
    for name in ("cmp_a", "cmp_b"):  # A and B open on the same window, labelled
        ab = _charts(at)[name]["layout"]
        assert ab["xaxis"]["range"] == layout["xaxis"]["range"] and ab["xaxis"]["showticklabels"]
        assert ab["yaxis"]["range"] == [last, first]
    per_head = _array(_charts(at)["cmp_heads"]["data"][0]["z"])
    layer, head = np.unravel_index(per_head.argmax(), per_head.shape)
    assert (at.slider(key="cmp_layer").value, at.slider(key="cmp_head").value) == (layer, head)


def test_attention_on_tiny_chars_offers_no_dead_controls():
    at = _app(ATTENTION, "tiny-chars")
    assert "attn_hide_special" not in [t.key for t in at.toggle]
    assert "attn_check_numbers" not in [b.key for b in at.button]
    assert "No check against Hugging Face here" in _texts(at)
    assert "own models" in _texts(at)
    at.selectbox(key="sb_model_choice").set_value("minilm").run()  # MiniLM keeps both
    assert "attn_hide_special" in [t.key for t in at.toggle]
    assert "attn_check_numbers" in [b.key for b in at.button]


def test_a_long_text_opens_on_a_clear_head_and_a_link_still_wins(minilm):
    trace = minilm.run(LONG)
    previous = head_statistics(trace.attentions, trace.tokens, trace.special_mask[0])["previous"]
    layer, head = np.unravel_index(previous.argmax(), previous.shape)
    assert (layer, head) != (0, 0)
    at = _app(ATTENTION, text=LONG)
    assert (at.slider(key="attn_layer").value, at.slider(key="attn_head").value) == (layer, head)
    text = _texts(at)
    assert f"opened on layer {layer}, head {head}" in text and "drag a box" in text
    assert f"{previous[layer, head]:.0%} of each row" in text
    at.slider(key="attn_head").set_value((head + 1) % 12).run()
    assert "opened on" not in _texts(at) and "drag a box" in _texts(at)

    linked = _app(ATTENTION, params={"text": LONG, "layer": "2", "head": "5"})
    assert (linked.slider(key="attn_layer").value, linked.slider(key="attn_head").value) == (2, 5)
    assert "opened on" not in _texts(linked)


def test_a_short_text_still_opens_on_layer_0_head_0():
    at = _app(ATTENTION)
    assert (at.slider(key="attn_layer").value, at.slider(key="attn_head").value) == (0, 0)
    assert "drag a box" not in _texts(at)
