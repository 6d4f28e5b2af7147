"""AppTest for the effect page (/effect) and the "Check these numbers" button on it and on the
attention page: MiniLM with and without a second sentence, the tiny character decoder, the
bounds messages (which agree with the sidebar's note when the model's context cut the text), a
one-click shorter text for the per-head view, Spearman's rho in plain words and a single
choice said in words instead of a one-option radio, driven by widget keys."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from analysis.ablation import Inputs  # noqa: E402
from analysis.effect import METHODS, MAX_OCCLUSION_TOKENS, token_importance  # noqa: E402
from analysis.effect_target import make_target  # noqa: E402
from ui.examples import SHORT  # noqa: E402
from ui.text import md_escape  # noqa: E402
from chart_data import chart_specs as _charts, plotly_array as _array  # noqa: E402
from page_links import open_page, open_with_sidebar, page_text, switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "effect"
SECOND = "A dog chased the ball."
CAT = "The cat sat on the mat."
DECLONG = ("The old lighthouse keeper climbed the stairs every evening to light the lamp. The sea "
           "was loud and the wind was cold, and far away a ship was looking for the harbour in "
           "the dark. He thought about his daughter, who lived in the city now.")


def _texts(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "warning", "success", "error")
             for e in at.get(kind)]
    return " ".join(str(p) for p in parts).replace("\\", "")  # Markdown escapes


def _strip_values(at: AppTest) -> np.ndarray:
    """The real values behind the strip's hover (customdata), as floats (NaN for "—")."""
    custom = _charts(at)["eff_strip"]["data"][0]["customdata"]
    return np.array([[np.nan if c == "—" else float(c) for c in row] for row in custom])


def test_minilm_without_a_second_sentence_shows_the_six_methods(minilm):
    at = open_with_sidebar(PAGE)
    text = _texts(at)
    assert "Attention is not explanation" in text
    assert "Target:" in text and "length (norm)" in text
    assert "occlusion up to 256 tokens" in text  # the bounds are on screen
    charts = _charts(at)
    assert {"eff_strip", "eff_heads"} <= set(charts)
    strip = charts["eff_strip"]["data"][0]
    assert len(strip["y"]) == len(METHODS) and strip["y"][0] == "Attention"
    inputs = Inputs.encode(minilm, SHORT)
    imp = token_importance(minilm, inputs, make_target(minilm, inputs), layer=5, head=0,
                           steps=64)
    shown = _strip_values(at)
    np.testing.assert_allclose(shown[0], imp.scores["attention"], rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(shown[5], imp.scores["occlusion"], rtol=1e-3, atol=1e-5)
    bars = charts["eff_strip"]["data"][1]  # beside the strip: Spearman with raw attention
    assert bars["text"][0] == "(itself)"
    np.testing.assert_allclose(_array(bars["x"])[1:], [imp.correlations[m] for m in METHODS[1:]],
                               atol=1e-6)
    np.testing.assert_allclose(_array(charts["eff_heads"]["data"][0]["z"]),
                               imp.head_correlations, atol=1e-6)
    # a slider move: another head, the same expensive part, a different attention row
    at.slider(key="eff_head").set_value(3).run()
    assert not at.exception
    other = token_importance(minilm, inputs, make_target(minilm, inputs), layer=5, head=3,
                             steps=8)
    np.testing.assert_allclose(_strip_values(at)[0], other.scores["attention"], rtol=1e-3,
                               atol=1e-6)
    assert at.query_params["ehead"] == "3" and at.query_params["elayer"] == "5"


def test_minilm_with_a_second_sentence_targets_the_similarity():
    at = open_with_sidebar(PAGE, pair=SECOND)
    text = _texts(at)
    assert "cosine similarity" in text and "A dog chased the ball" in text
    assert "only the point of comparison" in text
    tokens = _charts(at)["eff_strip"]["data"][0]["x"]
    assert not any("dog" in t for t in tokens)  # the second sentence is not measured
    at.radio(key="eff_baseline").set_value("mask").run()
    at.radio(key="eff_occlusion").set_value("mask").run()
    assert not at.exception and "[MASK] tokens" in _texts(at)


def test_tiny_chars_targets_a_position_and_has_no_pad_baseline():
    at = open_with_sidebar(PAGE, "tiny-chars", text="the cat sat")
    text = _texts(at)
    assert "next token" in text and "Target:" in text
    assert at.selectbox(key="eff_pos").value == len("the cat sat") - 1  # the last one
    # no [PAD] (or [MASK]) token there: the one baseline is said, not offered as a radio
    assert not [r for r in at.radio if r.key in ("eff_baseline", "eff_occlusion")]
    assert "Integrated gradients start from **zero vectors**" in text
    assert "for each token in turn, **remove the token**" in text
    at.selectbox(key="eff_pos").set_value(4).run()
    assert not at.exception
    values = _strip_values(at)
    assert np.isnan(values[:, 5:]).all() and np.isfinite(values[0, :5]).all()  # causal
    assert "finds “a” as the next token after “c” (token 4)" in _texts(at)  # the real next
    # Hugging Face has no code for our own models: one plain line, no button that could only
    # say so, and no table
    assert not [b for b in at.button if b.key == "eff_check_numbers"]
    assert any(c.value.startswith("No check against Hugging Face here.") for c in at.caption)
    assert not at.get("arrow_data_frame")


def test_a_long_text_is_never_cut_silently():
    long = " ".join(["word"] * (MAX_OCCLUSION_TOKENS + 20))
    at = open_with_sidebar(PAGE, text=long)
    text = _texts(at)
    n = MAX_OCCLUSION_TOKENS + 22  # with [CLS] and [SEP]
    assert f"for at most {MAX_OCCLUSION_TOKENS} tokens; the target sees {n}" in text
    # the default (64 steps) does not fit one batch: the slider starts at what fits, and a
    # quiet caption says so, not a warning about a setting the learner never chose
    assert at.select_slider(key="eff_steps").value == 16
    assert "Up to 16 steps for" in text
    assert not any("too many" in str(e.value) for e in at.info)
    # what fits at once is shown at once (fewer steps); the chosen steps wait for the button
    assert "eff_strip" in _charts(at) and "The 16 steps you chose" in _texts(at)
    at.button(key="eff_run").click().run()
    assert not at.exception
    assert "eff_strip" in _charts(at) and "Shorten the text to see it" in _texts(at)
    assert np.isnan(_strip_values(at)[5]).all()  # occlusion: not run, and shown as such
    assert _charts(at)["eff_strip"]["data"][0]["y"][5] == "Occlusion (not run)"


def test_check_these_numbers_on_the_attention_page():
    at = AppTest.from_file(APP, default_timeout=300).run()
    switch(at, "attention").run()
    assert not at.exception
    at.button(key="attn_check_numbers").click().run()
    assert not at.exception
    assert "Every layer agrees within 0.0001" in _texts(at)
    table = at.dataframe[0].value
    assert list(table["layer"]) == ["embeddings"] + [f"layer {i}" for i in range(6)]
    assert (table["within 1e-4"] == "✓").all() and table["hidden states"].max() <= 1e-4


@pytest.mark.parametrize("model", ["tiny-reverse"])
def test_the_encoder_decoder_gets_a_way_out(model):
    at = open_with_sidebar(PAGE, model)
    assert "no single number to trace back" in _texts(at)
    assert any(b.key.startswith("eff_switch") for b in at.button)


def test_a_link_reopens_the_same_view():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(elayer="2", ehead="7", eavg="1", esteps="16", ebase="mask",
                           eocc="pad")
    at.run()
    switch(at, PAGE).run()
    assert not at.exception
    assert at.slider(key="eff_layer").value == 2 and at.toggle(key="eff_average").value
    assert at.select_slider(key="eff_steps").value == 16
    assert at.radio(key="eff_baseline").value == "mask"
    assert at.radio(key="eff_occlusion").value == "pad"
    assert "16 steps from [MASK] tokens" in _texts(at)
    assert "layer 2, the average of its heads" in _charts(at)["eff_strip"]["layout"]["title"][
        "subtitle"]["text"]


def test_a_text_cut_by_the_context_does_not_say_it_is_never_cut():
    """tiny-chars reads 64 characters: the page says the text was cut, and no caption on the
    same page may claim that a longer text is never cut."""
    at = open_with_sidebar(PAGE, "tiny-chars", text="the old keeper climbed the stairs every evening to light "
              "the lamp, and the sea below was grey. " * 3)
    text = _texts(at)
    assert "never cut" not in text
    assert "never shorten your text" in text  # what the page's own limits do, said truly
    if any(b.key == "eff_run" for b in at.button):  # 64 tokens × 64 steps: waits for a click
        at.button(key="eff_run").click().run()
    assert not at.exception
    caption = next(c.value for c in at.caption if "Integrated gradients:" in c.value)
    assert "e-0" not in caption and "gap" in caption  # a plain number, no 3.9e-06


def test_effect_limits_caption_agrees_with_a_context_cut():
    at = open_page(PAGE, "tiny-chars", DECLONG)
    assert "were dropped" in page_text(at, ("warning",))
    (limits,) = [c.value for c in at.caption if c.value.startswith("Limits")]
    assert limits.endswith("(the model itself reads at most 64 tokens: see above).")
    at = open_page(PAGE, "tiny-chars", CAT)  # nothing cut: the plain sentence
    (limits,) = [c.value for c in at.caption if c.value.startswith("Limits")]
    assert limits.endswith("these limits never shorten your text.")


def test_effect_per_head_view_offers_a_shorter_text():
    long = " ".join(["word"] * (MAX_OCCLUSION_TOKENS + 20))
    at = open_page(PAGE, "minilm", long)
    at.button(key="eff_run").click().run()
    assert not at.exception
    assert "Shorten the text to see it" in page_text(at)
    button = at.button(key="eff_short_occ")
    assert button.label.startswith("Use the first ")
    assert button.label.endswith(" tokens of the text")
    n = int(button.label.split()[3])
    assert 200 < n <= MAX_OCCLUSION_TOKENS
    button.click().run()
    assert not at.exception
    shorter = at.session_state["sb_text"]
    assert long.startswith(shorter) and len(shorter.split()) == n - 2  # [CLS] and [SEP]


def test_effect_glosses_spearman_and_says_a_single_choice_in_words():
    at = open_page(PAGE, "tiny-chars", CAT)
    sub = _charts(at)["eff_strip"]["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")
    assert "rank agreement with attention (Spearman ρ: from −1 to 1, 1 means the two orders " \
           "match)" in sub
    assert not [r for r in at.radio if r.key in ("eff_baseline", "eff_occlusion")]
    text = page_text(at)
    assert "Integrated gradients start from **zero vectors**." in text
    assert "Occlusion: for each token in turn, **remove the token**." in text

    at = open_page(PAGE, "minilm", CAT)  # more than one choice: radios
    assert at.radio(key="eff_baseline").options == [
        md_escape(name) for name in ("padding tokens ([PAD])", "zero vectors", "[MASK] tokens")]
    assert len(at.radio(key="eff_occlusion").options) == 3
