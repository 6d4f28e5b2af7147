"""AppTest: a BLOOM folder (an architecture the engine does not know) in the sidebar. The
Attention page draws its attention from Hugging Face's own code; another page says in one
line that it needs a family the app knows, without an exception."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

import tiny_foreign  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
OTHER = "Other: local directory or hub id"


@pytest.fixture(scope="module")
def bloom_dir(tmp_path_factory):
    return tiny_foreign.make_bloom(tmp_path_factory.mktemp("foreign_app") / "bloom")


def _open(page: str, folder) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    switch(at, page)
    at.run()
    at.selectbox(key="sb_model_choice").set_value(OTHER).run()
    at.text_input(key="sb_model_other").input(str(folder)).run()
    return at


def test_attention_page_draws_the_foreign_models_attention(bloom_dir):
    at = _open("attention", bloom_dir)
    assert not at.exception
    heatmap = {el.key: json.loads(el.proto.spec) for el in at.get("plotly_chart")}["attn_heatmap"]
    assert heatmap["data"][0]["type"] == "heatmap"
    assert "3 heads" in " ".join(c.value for c in at.caption)
    assert any("Attention page works" in i.value for i in at.sidebar.info)
    assert not any("effect" in str(link.proto.page) for link in at.get("page_link"))  # dead end
    notes = [i.value for i in at.main.info]  # the one line, on the page itself
    assert len(notes) == 1 and "other pages need a model family this app knows" in notes[0]
    at.segmented_control(key="attn_view").set_value("Where a row comes from (Q·K)").run()
    assert not at.exception
    assert any("queries and keys" in i.value for i in at.main.info)
    assert not at.get("plotly_chart") or "attn_qk" not in [el.key for el in at.get("plotly_chart")]


def test_another_page_says_in_one_line_that_it_needs_a_known_family(bloom_dir):
    at = _open("heads", bloom_dir)
    assert not at.exception
    notes = [i.value for i in at.main.info]
    assert len(notes) == 1 and "other pages need a model family this app knows" in notes[0]
    assert not at.get("plotly_chart") and not at.dataframe
