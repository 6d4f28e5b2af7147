"""The start page's stored example (ui/start_example.py): the model's own numbers, checked
against a fresh run, and readable without torch so the first page draws before it loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from model import load_model  # noqa: E402
from ui import start_example  # noqa: E402
from ui.examples import SHORT  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_the_stored_example_is_what_the_model_computes_now():
    shown = start_example.stored()
    assert shown is not None, "assets/start_example.json is missing: python -m ui.start_example"
    loaded = load_model(start_example.EXAMPLE_MODEL)
    fresh = start_example.example(loaded, loaded.run(SHORT))
    assert shown["tokens"] == fresh["tokens"] and shown["text"] == SHORT
    assert (shown["layer"], shown["head"]) == (fresh["layer"], fresh["head"])
    assert shown["share"] == pytest.approx(fresh["share"], abs=1e-6)
    np.testing.assert_allclose(shown["pattern"], fresh["pattern"], atol=2e-6)
    trace = loaded.run(SHORT)
    np.testing.assert_allclose(shown["pattern"], trace.attentions[shown["layer"], shown["head"]],
                               atol=2e-6)


@pytest.mark.parametrize("content", [None, "{not json", json.dumps({"model": "minilm"}),
                                     "stale", "ragged"])
def test_a_missing_broken_or_stale_file_is_not_used(tmp_path, monkeypatch, content):
    good = json.loads(start_example.EXAMPLE_FILE.read_text())
    path = tmp_path / "example.json"
    if content == "stale":
        content = json.dumps(good | {"text": "Another sentence."})
    elif content == "ragged":
        content = json.dumps(good | {"pattern": good["pattern"][:-1]})
    if content is not None:
        path.write_text(content)
    monkeypatch.setattr(start_example, "EXAMPLE_FILE", path)
    assert start_example.stored() is None


def test_the_start_page_draws_before_torch_is_imported():
    """What app.py imports before it runs the start page, and what the start page imports and
    draws, load neither torch nor transformers, nor pandas and pyarrow (Streamlit's chart data
    path, ~0.3 s), in a fresh process, so nothing was imported before."""
    code = ("import sys\n"
            "from server import sessions, settings, uploads\n"
            "from ui import (busy, lesson_link, page_style, projector,\n"
            "                teacher_tools, urlstate, page_registry, view_state)\n"
            "import streamlit as st, ui.start_example, viz.attention_spec as v\n"
            "shown = ui.start_example.stored()\n"
            "assert shown is not None\n"
            "st.vega_lite_chart(v.attention_heatmap_spec(shown['pattern'], shown['tokens'], 't'))\n"
            "print(sorted(m for m in ('torch', 'transformers', 'pandas', 'pyarrow')\n"
            "             if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, HF_HUB_OFFLINE="1"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    start = (ROOT / "app_pages" / "start.py").read_text()
    top = start[:start.index("def ")]  # the page's own module-level imports
    assert "torch" not in top and "ui.cache" not in top and "from model" not in top


def test_the_start_heatmap_shows_the_matrix_cell_by_cell():
    from viz.attention_spec import attention_heatmap_spec, chart_width

    tokens = ["[CLS]", "<b>x</b>", "a & b", "[SEP]"]
    matrix = np.arange(16, dtype=float).reshape(4, 4) / 16
    spec = attention_heatmap_spec(matrix, tokens, "MiniLM, layer 0, head 2")
    layer = spec["layer"][0]
    assert "data" not in spec  # top-level data would go through pandas and pyarrow
    labels = layer["encoding"]["y"]["sort"]
    assert labels == ["0·[CLS]", "1·<b>x</b>", "2·a␣&␣b", "3·[SEP]"]  # plain text, not &lt;
    assert layer["encoding"]["x"]["sort"] == labels
    values = layer["data"]["values"]
    assert [(v["q"], v["k"]) for v in values[:5]] == [
        (labels[0], k) for k in labels] + [(labels[1], labels[0])]  # rows are queries
    assert [v["w"] for v in values] == pytest.approx(matrix.ravel().tolist())
    assert layer["encoding"]["color"]["scale"]["domain"] == [0, pytest.approx(15 / 16)]
    assert spec["height"] >= 400  # a short input gets a plot big enough to read
    assert chart_width(tokens) > spec["height"] + 100  # room for the labels and the legend
    with pytest.raises(ValueError, match="matrix must be"):
        attention_heatmap_spec(matrix[:3], tokens, "t")


@pytest.mark.parametrize("top", [1.0, 0.998, 0.63, 0.3, 0.05])
def test_the_colour_bar_is_labelled_from_zero_to_the_largest_weight(top):
    from viz.attention_spec import legend_ticks

    ticks = legend_ticks(top)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and 4 <= len(ticks) <= 12
    assert -0.01 <= top - ticks[-1] <= step / 2 + 1e-9  # the top label is at the top
    assert ticks == sorted(ticks)


def test_the_start_heatmap_grows_with_projector_mode():
    """In projector mode the page's text is larger: the example's labels grow as much, and its
    plot fills the page (at least 60% of a 768 px high screen) within that screen's height."""
    from viz.attention_spec import ROOM_SIDE_PX, attention_heatmap_spec, chart_width
    from viz.style import ROOM_PAGE_PX

    tokens = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "because", "it", "was",
              "warm", ".", "[SEP]"]
    matrix = np.eye(13)
    normal = attention_heatmap_spec(matrix, tokens, "t")
    room = attention_heatmap_spec(matrix, tokens, "t", room=True)
    axis = lambda spec: spec["layer"][0]["encoding"]["y"]["axis"]  # noqa: E731
    assert axis(room)["labelFontSize"] > axis(normal)["labelFontSize"]
    assert room["title"]["fontSize"] > normal["title"]["fontSize"]
    assert 0.6 * 768 <= room["height"] <= ROOM_SIDE_PX
    assert chart_width(tokens, room=True) <= ROOM_PAGE_PX
    assert chart_width(tokens, room=True) - room["height"] > chart_width(tokens) - normal["height"]
