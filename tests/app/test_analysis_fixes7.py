"""Session-7 fixes on the ablation and compare pages: the ranking table's short header and its
order, the info box that names no missing grid, and a text B that lines up with any text A."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from chart_data import chart_specs, plotly_array  # noqa: E402
from ui.examples import known_sentence  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
LONG_A = ("A lighthouse keeper climbed the stairs every night to light the lamp, and the "
          "ships far out at sea saw it shine across the dark water.")


def _app(text: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    if text is not None:
        at.text_area(key="sb_text").input(text).run()
    assert not at.exception
    return at


def _ranking(at):
    """The ranking table (the page's one table with an "effect" column) and its column config."""
    (table,) = [d for d in at.dataframe if "effect" in d.value.columns]
    return table.value, json.loads(table.proto.columns)["effect"]


def _charts(at) -> set:
    return {el.key for el in at.get("plotly_chart")}


def test_ablation_ranking_is_short_headed_sorted_by_size_and_names_its_count():
    at = _app()
    at.switch_page("app_pages/ablation.py").run()
    assert not at.exception
    info = " ".join(i.value for i in at.info)
    assert "measure every head below" in info and "importance grid below" not in info
    table, column = _ranking(at)
    effects = table["effect"].to_numpy()
    assert len(effects) == 10
    assert np.all(np.diff(np.abs(effects)) <= 1e-12)  # largest change first, whatever its sign
    assert column["label"] == "1 − cosine (sentence)"  # short header; the long text is its help
    assert column["help"].startswith("how far the sentence's meaning vector turned")
    assert any("The 10 heads whose removal" in c.value for c in at.caption)


def test_ablation_ranking_on_a_decoder_sorts_by_absolute_change(tiny_dirs):
    at = _app()
    at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
    at.text_input(key="sb_model_other").input(str(tiny_dirs["gpt2"])).run()
    at.switch_page("app_pages/ablation.py").run()
    assert not at.exception
    table, column = _ranking(at)
    effects = table["effect"].to_numpy()
    n_heads = len(at.multiselect(key="abl_heads").options)
    assert len(effects) == min(10, n_heads)
    assert np.all(np.diff(np.abs(effects)) <= 1e-12)
    first = f"All {n_heads} heads" if n_heads <= 10 else "The 10 heads whose removal"
    assert any(c.value.startswith(first + ", largest change first") for c in at.caption)
    assert column["label"] == "Δ loss (nats)" and "> 0: worse" in column["help"]


def test_ablation_says_plainly_when_removing_a_head_helps():
    """tiny-chars on English it was not trained on: some heads' removal lowers the loss. The
    grid must not leave a learner thinking those heads are broken."""
    at = _app("The cat sat on the mat.")
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    at.switch_page("app_pages/ablation.py").run()
    assert not at.exception
    z = plotly_array(chart_specs(at)["abl_grid"]["data"][0]["z"]).astype(float)
    better = int((z < 0).sum())
    assert better > 0  # the run itself: some heads get in the way on this text
    note = [c.value for c in at.caption if c.value.startswith("Blue cells")]
    assert note and f"({better} of {z.size})" in note[0]
    at.button(key="abl_known_text").click().run()
    assert at.text_area(key="sb_text").value == known_sentence("tiny-chars")


def test_compare_opens_on_a_difference_map_for_any_text_a():
    at = _app(LONG_A)
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception
    b = at.text_area(key="cmp_text_b").value
    assert b != LONG_A and len(b.split()) == len(LONG_A.split())  # one word swapped
    assert sum(x != y for x, y in zip(b.split(), LONG_A.split())) == 1
    assert "No difference map" not in " ".join(i.value for i in at.info)
    assert {"cmp_diff", "cmp_heads"} <= _charts(at)

    # B follows A while the user has not typed one ...
    at.text_area(key="sb_text").input("The big red car stopped at the light.").run()
    assert not at.exception
    assert at.text_area(key="cmp_text_b").value.startswith("The small red car")
    assert "cmp_diff" in _charts(at)
    # ... and a B the user typed is kept when A changes
    at.text_area(key="cmp_text_b").input("My own sentence here.").run()
    at.text_area(key="sb_text").input("Another text for A.").run()
    assert not at.exception
    assert at.text_area(key="cmp_text_b").value == "My own sentence here."


def test_heads_table_is_narrow_enough_for_a_small_screen():
    at = _app()
    at.switch_page("app_pages/heads.py").run()
    at.selectbox(key="hs_stat").set_value("previous").run()
    assert not at.exception
    (table,) = [d for d in at.dataframe if "head" in d.value.columns]
    frame, config = table.value, json.loads(table.proto.columns)
    assert list(frame.columns[:2]) == ["head", "To the previous token"]  # chosen first
    assert frame["head"].iloc[0] == "L0 H2"  # layer and head in one narrow column
    top = frame["To the previous token"].iloc[0]
    assert 1 < top <= 100 and frame["To the previous token"].is_monotonic_decreasing  # percent
    column = config["To the previous token"]
    assert column["label"] == "Prev" and column["type_config"]["format"] == "%.0f%%"
    assert column["width"] <= 72 and config["Entropy (bits)"]["type_config"]["format"] == "%.2f"
    # every column fits the 467 px main column of an 800 px screen
    assert sum(c.get("width", 0) for c in config.values()) <= 467
