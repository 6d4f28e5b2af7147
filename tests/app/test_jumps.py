"""Every button that opens another page keeps the sidebar's model and text and lands on the
view it names: "Open on the attention page" on head statistics and patching, "Open its
attention" on attribution, and the start page's "Try it with your sentence". (A click in a
head grid calls the same callback: tests/app/test_decoder_pages.py and test_patching_page.py;
in Chromium: tests/browser/test_jumps_browser.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from page_links import APP, open_page  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from model import load_model  # noqa: E402

TEXT = "abcdefabcdef"  # tiny-induction's own kind of text; every model reads it


def _landed(at, model: str, text: str, layer: int, head: int) -> None:
    """The attention page drew `model`'s own head (layer, head) on `text`."""
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["Attention"]
    state = at.session_state
    assert (state["sb_model_choice"], state["sb_text"]) == (model, text)
    assert (state["attn_layer"], state["attn_head"]) == (layer, head)
    cfg = load_model(model).cfg
    assert any(f"{cfg.n_layers} layers × {cfg.n_heads} heads" in c.value for c in at.caption)
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if c.key == "attn_heatmap")
    assert spec["layout"]["title"]["text"].startswith(f"Layer {layer}, head {head}")
    labels = spec["data"][0].get("x") or spec["layout"]["xaxis"].get("ticktext")
    tokens = load_model(model).run(text).tokens
    assert len(labels) == len(tokens)  # its own tokens: MiniLM would add [CLS] and [SEP]
    assert at.query_params["model"] in (model, [model])


@pytest.mark.parametrize("model", ["tiny-induction", "tiny-chars", "minilm"])
def test_head_statistics_opens_the_chosen_head_of_the_same_model(model):
    at = open_page("heads", model, TEXT)
    at.session_state["attn_average"] = True  # left over from an earlier visit: reset
    at.selectbox(key="hs_open_head").set_value((1, 1)).run()
    at.button(key="hs_open_btn").click().run()
    _landed(at, model, TEXT, 1, 1)
    assert at.toggle(key="attn_average").value is False


@pytest.mark.parametrize("model", ["tiny-induction", "tiny-chars"])
def test_attribution_opens_its_head_of_the_same_model(model):
    at = open_page("attribution", model, TEXT)
    at.selectbox(key="attr_open_head").set_value((1, 0)).run()
    at.button(key="attr_open_btn").click().run()
    _landed(at, model, TEXT, 1, 0)


def test_the_patching_preset_opens_tiny_inductions_head_on_its_clean_sequence():
    at = open_page("patching", "tiny-induction", TEXT)
    assert at.radio(key="pt_mode").value == "preset"
    clean = at.session_state["_pt_clean_text"]
    at.selectbox(key="pp_box").set_value((1, 2)).run()
    at.button(key="pp_open").click().run()
    _landed(at, "tiny-induction", clean, 1, 2)


def test_patching_prompts_open_the_head_of_the_same_model():
    at = open_page("patching", "tiny-chars", TEXT)
    at.selectbox(key="pt_box").set_value((0, 3)).run()
    at.button(key="pt_open").click().run()
    _landed(at, "tiny-chars", TEXT, 0, 3)


def test_the_start_page_opens_your_sentence_on_its_example_head():
    at = AppTest.from_file(APP, default_timeout=300).run()
    assert any("stored example" in c.value for c in at.caption)
    at.text_input(key="start_try_text").input("The dog ran to the park.").run()
    at.button(key="start_try").click().run()
    example = json.loads((ROOT / "assets" / "start_example.json").read_text())
    _landed(at, "minilm", "The dog ran to the park.", example["layer"], example["head"])


def test_a_model_picked_in_the_sidebar_is_kept_by_the_jump():
    at = open_page("heads", "minilm", TEXT)
    at.selectbox(key="sb_model_choice").set_value("tiny-induction").run()
    assert not at.exception
    at.selectbox(key="hs_open_head").set_value((0, 3)).run()
    at.button(key="hs_open_btn").click().run()
    _landed(at, "tiny-induction", TEXT, 0, 3)
