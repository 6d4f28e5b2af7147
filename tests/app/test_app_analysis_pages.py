"""AppTest for the analysis pages (head statistics, ablation, logit lens, compare), driven by
widget keys with the bundled MiniLM and with a tiny GPT-2 decoder loaded from a directory."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from analysis.head_stats import head_statistics, pooled_statistics, trace_totals  # noqa: E402
from ui.examples import SHORT, known_sentence  # noqa: E402
from chart_data import chart_specs as _charts, plotly_array as _array  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = ("heads", "ablation", "logit-lens",
         "compare")


def _app(model_dir: Path | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    if model_dir is not None:
        at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
        at.text_input(key="sb_model_other").input(str(model_dir)).run()
    assert not at.exception
    return at




def _texts(elements) -> str:
    return " ".join(e.value for e in elements)


def test_minilm_heads_page_shows_the_statistics_and_opens_a_head(minilm):
    at = _app()
    switch(at, PAGES[0]).run()
    assert not at.exception
    trace = minilm.run(SHORT)
    stats = head_statistics(trace.attentions, trace.tokens, trace.special_mask[0])
    grid = _charts(at)["hs_grid"]
    assert "entropy" in grid["layout"]["title"]["text"].lower()
    np.testing.assert_allclose(_array(grid["data"][0]["z"]), stats["entropy"], atol=1e-5)
    (table,) = [d.value for d in at.dataframe if "head" in d.value.columns]
    assert len(table) == 72 and table.iloc[0]["Entropy (bits)"] == pytest.approx(
        stats["entropy"].max(), abs=1e-5)  # sorted by the chosen statistic, largest first
    assert "log_2" in _texts(at.markdown)  # the definition is on screen

    at.selectbox(key="hs_stat").set_value("previous").run()
    np.testing.assert_allclose(_array(_charts(at)["hs_grid"]["data"][0]["z"]),
                               stats["previous"], atol=1e-5)

    more = "Birds sing while the river runs past the old mill."  # pooled with the sidebar text
    at.text_area(key="hs_more").input(more).run()
    assert not at.exception
    pooled = pooled_statistics([trace_totals(trace), trace_totals(minilm.run(more))])
    shown = _array(_charts(at)["hs_grid"]["data"][0]["z"])
    np.testing.assert_allclose(shown, pooled["previous"], atol=1e-5)
    assert np.abs(shown - stats["previous"]).max() > 1e-3

    at.selectbox(key="hs_open_head").set_value((4, 9)).run()
    at.button(key="hs_open_btn").click().run()
    assert not at.exception
    assert at.slider(key="attn_layer").value == 4 and at.slider(key="attn_head").value == 9
    assert "layer 4, head 9" in _charts(at)["attn_heatmap"]["layout"]["title"]["text"].lower()
    # its picture saves as what it shows, cropped to the figure
    (heatmap,) = [el for el in at.get("plotly_chart") if el.key == "attn_heatmap"]
    saved = json.loads(heatmap.proto.config)["toImageButtonOptions"]
    assert saved["filename"] == "minilm_attention_layer-4-head-9"
    layout = _charts(at)["attn_heatmap"]["layout"]
    assert saved["height"] == layout["height"] and saved["width"] < 1000  # not the page's width
    assert saved["width"] == layout.get("width", saved["width"])


def test_minilm_ablation_logit_lens_and_compare():
    at = _app()
    switch(at, PAGES[1]).run()
    assert not at.exception
    assert "abl_grid" in _charts(at)  # a short text: the importance sweep ran by itself
    at.multiselect(key="abl_heads").set_value([(0, 3), (2, 7)]).run()
    assert not at.exception
    metrics = {m.label: float(m.value) for m in at.metric}
    assert 0 < metrics["Sentence cosine"] < 1
    at.selectbox(key="abl_layer").set_value(5).run()
    at.button(key="abl_add_layer").click().run()
    assert len(at.multiselect(key="abl_heads").value) == 2 + 12
    more = {m.label: float(m.value) for m in at.metric}
    assert more["Sentence cosine"] != metrics["Sentence cosine"]

    switch(at, PAGES[3]).run()
    assert not at.exception
    charts = _charts(at)
    assert {"cmp_a", "cmp_b", "cmp_diff", "cmp_heads", "cmp_stats"} <= set(charts)
    diff = _array(charts["cmp_diff"]["data"][0]["z"])
    a, b = (_array(charts[k]["data"][0]["z"]) for k in ("cmp_a", "cmp_b"))
    np.testing.assert_allclose(diff, b - a, atol=1e-6)
    assert np.abs(diff).max() > 0.01  # cat -> dog, mat -> rug, warm -> cold changed something
    at.text_area(key="cmp_text_b").input("A much longer sentence, which tokenizes to many more "
                                         "word pieces than the first one does.").run()
    assert not at.exception
    assert "No difference map" in _texts(at.info) and "cmp_diff" not in _charts(at)

    switch(at, PAGES[2]).run()  # MiniLM has no next token: the lens opens on tiny-words
    assert not at.exception
    assert "MiniLM is an encoder" in _texts(at.info) and "lens_table" in _charts(at)
    assert at.selectbox(key="sb_model_choice").value == "tiny-words"
    assert at.button(key="lens_switch_tiny-chars")  # the other decoders: one click


def test_tiny_gpt2_decoder_on_every_page(tiny_dirs, tiny_models_loaded):
    at = _app(tiny_dirs["gpt2"])
    switch(at, PAGES[0]).run()
    assert not at.exception
    assert "next" not in at.selectbox(key="hs_stat").options  # a causal model never looks ahead

    switch(at, PAGES[1]).run()
    at.multiselect(key="abl_heads").set_value([(1, 0)]).run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert "Loss per token" in labels and "Perplexity" in labels
    charts = _charts(at)
    assert {"abl_next", "abl_nll", "abl_grid"} <= set(charts)
    assert charts["abl_nll"]["data"][0]["x"][0].startswith("1·")  # the loss on token 1 first
    assert at.radio(key="abl_metric").value == "loss"

    switch(at, PAGES[2]).run()
    assert not at.exception
    lens = _charts(at)["lens_table"]
    trace = tiny_models_loaded["gpt2"].run(SHORT)
    start, end = at.slider(key="lens_window").value
    top = trace.logits[0].softmax(-1).max(-1).values.numpy()  # [pos]
    z = _array(lens["data"][0]["z"])  # [row, window]
    np.testing.assert_allclose(z[-1], top[start:end + 1], atol=1e-5)  # last row = real output
    (detail,) = at.table  # the page's one table: a row per layer
    assert list(detail.value["layer"]) == ["embeddings", "after layer 0", "after layer 1"]

    switch(at, PAGES[3]).run()
    assert not at.exception
    assert "cmp_diff" in _charts(at)  # the default B swaps a word: a difference to draw
    at.button(key="cmp_copy").click().run()  # B = A: nothing to compare, so no figures
    assert not at.exception
    assert "B is the same as A" in _texts(at.info) and "cmp_diff" not in _charts(at)


def test_the_logit_lens_switches_an_encoder_to_a_bundled_decoder_in_one_click():
    from model import load_model

    tiny_chars = load_model("tiny-chars")
    at = _app()
    at.text_input(key="sb_pair").input("A second sentence.").run()
    switch(at, PAGES[2]).run()  # opens on tiny-words; MiniLM picked on the page is kept
    at.selectbox(key="sb_model_choice").set_value("minilm").run()
    at.selectbox(key="sb_example").set_value("Short sentence").run()
    at.text_input(key="sb_pair").input("A second sentence.").run()
    assert "lens_table" not in _charts(at)
    assert "second sentence" in _texts(at.caption)  # says that switching clears it
    at.button(key="lens_switch_tiny-chars").click().run()
    assert not at.exception
    assert at.selectbox(key="sb_model_choice").value == "tiny-chars"
    assert at.text_input(key="sb_pair").value == ""  # a character model reads one text
    lens = _charts(at)["lens_table"]
    trace = tiny_chars.run(known_sentence("tiny-chars"))  # the switch puts in a text it knows
    start, end = at.slider(key="lens_window").value
    top = trace.logits[0].softmax(-1).max(-1).values.numpy()  # [pos]
    np.testing.assert_allclose(_array(lens["data"][0]["z"])[-1], top[start:end + 1], atol=1e-5)


def test_the_switch_offers_only_what_a_hosted_server_lists(hosted):
    hosted.setenv("ATTENTION_LAB_MODELS", "minilm,tiny-induction")
    at = _app()
    switch(at, PAGES[2]).run()
    assert not at.exception
    assert at.button(key="lens_switch_tiny-induction")
    assert not [b for b in at.button if b.key == "lens_switch_tiny-chars"]
    at.button(key="lens_switch_tiny-induction").click().run()
    assert not at.exception and "lens_table" in _charts(at)


def test_a_decoder_without_lm_head_runs_everywhere_but_the_lens(tiny_dirs, tmp_path):
    from safetensors.torch import load_file, save_file

    directory = tmp_path / "bare-llama"  # the tiny Llama (untied) with its lm_head taken out
    shutil.copytree(tiny_dirs["llama"], directory)
    state = load_file(str(directory / "model.safetensors"))
    del state["lm_head.weight"]
    save_file(state, str(directory / "model.safetensors"))
    at = _app(directory)
    assert "without its language\-model head" not in _texts(at.sidebar.info)  # Markdown kept
    assert "saved without its language-model head" in _texts(at.sidebar.info)
    switch(at, PAGES[2]).run()
    assert not at.exception and "lens_table" not in _charts(at)
    assert "bare\\-llama was saved without one" in _texts(at.info)
    assert at.button(key="lens_switch_tiny-chars")
    for page in (PAGES[0], PAGES[1], PAGES[3], "attention"):
        switch(at, page).run()
        assert not at.exception and _charts(at)  # attention and the rest still work
    switch(at, PAGES[1]).run()
    at.multiselect(key="abl_heads").set_value([(1, 0)]).run()
    assert not at.exception
    assert not any("Loss" in m.label for m in at.metric)  # no head: no loss, cosines instead
    assert any("cosine" in m.label.lower() for m in at.metric)


def test_a_hub_id_offline_says_what_to_set_on_the_page():
    at = _app()
    at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
    at.text_input(key="sb_model_other").input("gpt2").run()
    switch(at, "attention").run()
    assert not at.exception
    shown = _texts(at.main.error)
    assert "need a network connection" in shown and "HF_HUB_OFFLINE=1" in shown
    assert "LocalEntryNotFoundError" not in shown + _texts(at.sidebar.error)
    at.button(key="sb_back_to_default").click().run()
    assert not at.exception and at.selectbox(key="sb_model_choice").value == "minilm"
    assert _charts(at)


# ------------------------------------------------------------ figures used by the pages
def test_difference_map_figure():
    from viz.compare import difference_heatmap, paired_labels

    assert paired_labels(["[CLS]", "cat", "<x>"], ["[CLS]", "dog", "<x>"]) == [
        "0·[CLS]", "1·cat|dog", "2·&lt;x&gt;"]
    a = np.array([[1.0, 0.0], [0.5, 0.5]])
    b = np.array([[1.0, 0.0], [0.2, 0.8]])
    heat = difference_heatmap(a, b, ["a", "b"], ["a", "c"], causal=True).data[0]
    z = np.asarray(heat.z, dtype=float)
    assert np.isnan(z[0, 1])  # masked: a causal query never sees a later key
    np.testing.assert_allclose(z[1], [-0.3, 0.3], atol=1e-6)
    assert heat.zmid == 0 and heat.zmax == pytest.approx(0.3) and heat.zmin == pytest.approx(-0.3)
    with pytest.raises(ValueError, match="same number of tokens"):
        difference_heatmap(a, b, ["a", "b"], ["a"])


def test_ablation_figures():
    from viz.heads import next_token_bars, token_bars

    bars = next_token_bars(["Ġcat", "<b>"], [0.5, 0.2], [0.1, 0.6]).data
    assert list(bars[0].y) == ["1. ␣cat", "2. &lt;b&gt;"] and list(bars[1].x) == [0.1, 0.6]
    fig = token_bars(["a", "b", "c"], [0.1, -0.4, 0.2], "Δ loss", "Δ", diverging=True)
    assert fig.data[0].marker.cmin == pytest.approx(-0.4) and fig.data[0].marker.cmid == 0
    with pytest.raises(ValueError, match="one entry per token"):
        token_bars(["a"], [0.1, 0.2], "t", "v")
    with pytest.raises(ValueError, match="same length"):
        next_token_bars(["a"], [0.1, 0.2], [0.3])
