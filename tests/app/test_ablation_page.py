"""The ablation page (/ablation): the ranking table has a short header and lists the heads whose
removal changes the output most, largest change first whatever its sign (on an encoder and on a
decoder); the info box names no grid that is not there; and when removing a head helps, the page
says so plainly and offers a text the model knows."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from chart_data import chart_specs, plotly_array  # noqa: E402
from page_links import start_app, switch  # noqa: E402
from ui.examples import known_sentence  # noqa: E402


def _ranking(at):
    """The ranking table (the page's one table with an "effect" column) and its column config."""
    (table,) = [d for d in at.dataframe if "effect" in d.value.columns]
    return table.value, json.loads(table.proto.columns)["effect"]


def test_ablation_ranking_is_short_headed_sorted_by_size_and_names_its_count():
    at = start_app()
    switch(at, "ablation").run()
    assert not at.exception
    info = " ".join(i.value for i in at.info)
    assert "measure every head below" in info and "importance grid below" not in info
    table, column = _ranking(at)
    effects = table["effect"].to_numpy()
    assert len(effects) == 10
    assert np.all(np.diff(np.abs(effects)) <= 1e-12)  # largest change first, whatever its sign
    assert column["label"] == "1 − cosine (sentence)"  # short header; the long text is its help
    assert column["help"].startswith("how far the sentence's meaning vector turned")
    assert any("The 10 of 72 heads whose removal" in c.value for c in at.caption)  # a cut said


def test_ablation_ranking_on_a_decoder_sorts_by_absolute_change(tiny_dirs):
    at = start_app()
    at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
    at.text_input(key="sb_model_other").input(str(tiny_dirs["gpt2"])).run()
    switch(at, "ablation").run()
    assert not at.exception
    table, column = _ranking(at)
    effects = table["effect"].to_numpy()
    n_heads = len(at.multiselect(key="abl_heads").options)
    assert len(effects) == min(10, n_heads)
    assert np.all(np.diff(np.abs(effects)) <= 1e-12)
    first = f"All {n_heads} heads" if n_heads <= 10 else \
        f"The 10 of {n_heads} heads whose removal"
    assert any(c.value.startswith(first + ", largest change first") for c in at.caption)
    assert column["label"] == "Δ loss (nats)" and "> 0: worse" in column["help"]


def test_ablation_says_plainly_when_removing_a_head_helps():
    """tiny-chars on English it was not trained on: some heads' removal lowers the loss. The
    grid must not leave a learner thinking those heads are broken."""
    at = start_app("The cat sat on the mat.")
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    switch(at, "ablation").run()
    assert not at.exception
    z = plotly_array(chart_specs(at)["abl_grid"]["data"][0]["z"]).astype(float)
    better = int((z < 0).sum())
    assert better > 0  # the run itself: some heads get in the way on this text
    note = [c.value for c in at.caption if c.value.startswith("Blue cells")]
    assert note and f"({better} of {z.size})" in note[0]
    at.button(key="abl_known_text").click().run()
    assert at.text_area(key="sb_text").value == known_sentence("tiny-chars")


@pytest.mark.parametrize("model, heads", [("tiny-induction", "1.1"), ("minilm", "5.11")])
def test_ablation_metric_labels_fit_an_800_px_column(model, heads):
    """Three metrics side by side on a decoder, two on an encoder: at 800 px a column holds
    about 16 characters beside the help icon; longer labels were cut ("Loss on the text (n…")."""
    from page_links import open_page

    at = open_page("ablation", model, "The cat sat.", abheads=heads)
    labels = [m.label for m in at.metric]
    assert labels and all(len(label) <= 16 for label in labels), labels
