"""Holes found in a hostile run of hosted mode: links, text limits, what a link and the model
picker reveal. Each test failed on the code before the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_link, switch  # noqa: E402

from tiny_models import make_gpt2  # noqa: E402
from ui.urlstate import url_int  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _heatmap(at: AppTest) -> dict:
    return json.loads(at.get("plotly_chart")[0].proto.spec)


@pytest.mark.parametrize("value, expected", [
    ("3", 3), ("012", 12), (" 7 ", 7), ("²", None), ("٣", None), ("３", None), ("-1", None),
    ("1.5", None), ("", None), ("9" * 5000, None), ("1234567", None), ("1e3", None),
])
def test_url_integers_are_parsed_strictly(value, expected):
    assert url_int(value) == expected


@pytest.mark.parametrize("layer", ["²", "٣", "9" * 5000, "-3", "99999"])
def test_a_hostile_layer_in_a_link_opens_the_page(layer):
    at = open_link("attention", layer=layer, head="1")
    assert not at.exception
    assert _heatmap(at)["data"][0]["type"] == "heatmap"
    assert at.slider(key="attn_head").value == 1


@pytest.mark.parametrize("step", ["²", "9" * 5000])
def test_a_hostile_walkthrough_step_in_a_link_opens_the_page(step):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["step"] = step
    at.query_params["wlayer"] = "²"
    at.run()
    switch(at, "walkthrough").run()
    assert not at.exception
    assert at.selectbox(key="wk_step").value == 1


def test_every_extra_text_on_head_statistics_obeys_the_hosted_limit(hosted):
    from server import settings
    from ui.cache import _run_cache

    long_line = "word " * 2000  # 10,000 characters
    at = open_link("heads")
    at.text_area(key="hs_more").set_value(long_line + "\n" + long_line[:-2] + "x").run()
    assert not at.exception
    assert any("cut to 5,000 characters" in w.value for w in at.warning)
    texts = [key[2] for key in list(_run_cache()._items) if key[0] == "head_totals_text"]
    assert texts and all(len(t) <= settings.MAX_CHARS_HOSTED for t in texts)


def test_the_picker_and_the_link_never_show_a_server_directory(hosted, tmp_path):
    directory = make_gpt2(tmp_path / "srv" / "models" / "class-gpt")
    hosted.setenv("ATTENTION_LAB_MODELS", f"minilm,{directory}")
    at = open_link("attention")
    box = at.selectbox(key="sb_model_choice")
    assert "class-gpt" in box.options and not any(str(tmp_path) in o for o in box.options)
    box.set_value(str(directory)).run()
    assert not at.exception
    assert at.query_params["model"] in ("class-gpt", ["class-gpt"])
    # the link opens the same model on the same server
    again = open_link("attention", model="class-gpt", text="hello there")
    assert again.selectbox(key="sb_model_choice").value == str(directory)
    assert not again.exception


def test_the_query_token_box_shows_the_token_as_typed():
    at = open_link("attention", text="<b>bold</b> & co")
    at.segmented_control(key="attn_view").set_value("Where a row comes from (Q·K)").run()
    options = at.selectbox(key="attn_query").options
    assert any("<" in o for o in options) and not any("&lt;" in o or "&amp;" in o
                                                      for o in options)


# ------------------------------------------------------------ long texts in a link (textz=)
def _long_text(n_chars: int) -> str:
    from ui.examples import LONG

    return ((LONG + " ") * (n_chars // len(LONG) + 1))[:n_chars]


def test_a_long_text_goes_in_the_link_compressed_and_comes_back():
    text = _long_text(4_000)
    at = open_link("attention")
    at.text_area(key="sb_text").input(text).run()
    assert not at.exception
    params = dict(at.query_params)
    assert "text" not in params and "textz" in params
    packed = params["textz"] if isinstance(params["textz"], str) else params["textz"][0]
    again = open_link("attention", textz=packed, model="minilm")
    assert not again.exception
    assert again.text_area(key="sb_text").value == text
    assert _heatmap(again)["data"][0]["type"] == "heatmap"
    assert "too long for the page's link" not in " ".join(c.value for c in again.caption)


def test_a_short_text_stays_readable_in_the_link():
    at = open_link("attention")
    at.text_area(key="sb_text").input("A short text.").run()
    assert at.query_params["text"] in ("A short text.", ["A short text."])
    assert "textz" not in at.query_params


def test_a_text_too_long_even_compressed_is_left_out_and_the_page_says_so():
    import random

    rng = random.Random(0)  # random letters hardly compress
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(20_000))
    at = open_link("attention")
    at.text_area(key="sb_text").input(text).run()
    assert not at.exception
    assert "text" not in at.query_params and "textz" not in at.query_params
    assert any("too long for the page's link" in c.value for c in at.sidebar.caption)


@pytest.mark.parametrize("value", [
    "%%%not base64%%%", "A", "eJzLSM3JyVcozy/KSQEAGgQEXQ"[:-4],  # junk, one char, cut short
    "eJwrSS0uMTQwAAAL7wJ2" * 400,  # far too long
    "eNrtwTEBAAAAwqD1T20LL6AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" + "A" * 3000,
])
def test_a_hostile_compressed_text_opens_the_page_with_the_example(value):
    from ui.examples import SHORT

    at = open_link("attention", textz=value)
    assert not at.exception
    assert at.text_area(key="sb_text").value == SHORT
    assert any("could not be read" in w.value for w in at.sidebar.warning)
    assert _heatmap(at)["data"][0]["type"] == "heatmap"


def test_a_zip_bomb_in_a_link_opens_the_page_with_the_example():
    import base64
    import zlib

    from ui.examples import SHORT

    bomb = base64.urlsafe_b64encode(zlib.compress(b"a" * 4_000_000, 9)).rstrip(b"=").decode()
    at = open_link("attention", textz=bomb)
    assert not at.exception
    assert at.text_area(key="sb_text").value == SHORT
