"""Holes found in a hostile run of hosted mode: links, text limits, what a link and the model
picker reveal. Each test failed on the code before the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from tiny_models import make_gpt2  # noqa: E402
from ui.urlstate import url_int  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _app(page: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page(page or "app_pages/attention.py")  # the start page is the default
    return at.run()


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
    at = _app(layer=layer, head="1")
    assert not at.exception
    assert _heatmap(at)["data"][0]["type"] == "heatmap"
    assert at.slider(key="attn_head").value == 1


@pytest.mark.parametrize("step", ["²", "9" * 5000])
def test_a_hostile_walkthrough_step_in_a_link_opens_the_page(step):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["step"] = step
    at.query_params["wlayer"] = "²"
    at.run()
    at.switch_page("app_pages/walkthrough.py").run()
    assert not at.exception
    assert at.radio(key="wk_step").value == 1


def test_every_extra_text_on_head_statistics_obeys_the_hosted_limit(hosted):
    from ui import settings
    from ui.cache import _run_cache

    long_line = "word " * 2000  # 10,000 characters
    at = _app("app_pages/heads.py")
    at.text_area(key="hs_more").set_value(long_line + "\n" + long_line[:-2] + "x").run()
    assert not at.exception
    assert any("cut to 5,000 characters" in w.value for w in at.warning)
    texts = [key[2] for key in list(_run_cache()._items) if key[0] == "head_totals_text"]
    assert texts and all(len(t) <= settings.MAX_CHARS_HOSTED for t in texts)


def test_the_picker_and_the_link_never_show_a_server_directory(hosted, tmp_path):
    directory = make_gpt2(tmp_path / "srv" / "models" / "class-gpt")
    hosted.setenv("ATTENTION_LAB_MODELS", f"minilm,{directory}")
    at = _app()
    box = at.selectbox(key="sb_model_choice")
    assert "class-gpt" in box.options and not any(str(tmp_path) in o for o in box.options)
    box.set_value(str(directory)).run()
    assert not at.exception
    assert at.query_params["model"] in ("class-gpt", ["class-gpt"])
    # the link opens the same model on the same server
    again = _app(model="class-gpt", text="hello there")
    assert again.selectbox(key="sb_model_choice").value == str(directory)
    assert not again.exception


def test_the_query_token_box_shows_the_token_as_typed():
    at = _app(text="<b>bold</b> & co")
    at.segmented_control(key="attn_view").set_value("Where a row comes from (Q·K)").run()
    options = at.selectbox(key="attn_query").options
    assert any("<" in o for o in options) and not any("&lt;" in o or "&amp;" in o
                                                      for o in options)
