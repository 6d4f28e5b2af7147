"""AppTest for the embeddings page's words: the first screen speaks in
plain words and only of the parts the loaded model has; its scatter plots name crowded points
on hover instead of piling their labels up."""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from chart_data import chart_specs as _charts  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
OTHER = "Other: local directory or hub id"
JARGON = ("AttentionViz", "d_head", "L2", "‖", "raw q", "variance", "softmax")


def _page(model: str | None = None, model_dir: Path | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    if model is not None:
        at.selectbox(key="sb_model_choice").set_value(model).run()
    if model_dir is not None:
        at.selectbox(key="sb_model_choice").set_value(OTHER).run()
        at.text_input(key="sb_model_other").input(str(model_dir)).run()
    switch(at, "embeddings").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _words(at: AppTest) -> str:
    """What a learner reads without opening anything: markdown, captions, figure titles,
    subtitles and axis titles, the table's column names (Markdown escapes removed)."""
    hidden = [m.value for e in at.main.expander for m in list(e.markdown) + list(e.caption)]
    shown = [m.value for m in list(at.main.markdown) + list(at.main.caption)]
    for value in hidden:
        shown.remove(value)
    for spec in _charts(at).values():
        layout = spec["layout"]
        shown.append(str(layout["title"]["text"]))
        shown.append(str(layout["title"].get("subtitle", {}).get("text", "")))
        for axis in ("xaxis", "yaxis"):
            shown.append(str(layout.get(axis, {}).get("title", {}).get("text", "")))
    shown += [str(c) for c in at.dataframe[0].value.columns]
    return "\n".join(shown).replace("\\", "").replace("<br>", " ")


def _intro(at: AppTest) -> str:
    return next(m.value for m in at.main.markdown if "picks one row" in m.value)


def test_minilm_first_screen_in_plain_words():
    at = _page()
    words = _words(at)
    for jargon in JARGON:
        assert jargon not in words, jargon
    intro = _intro(at)
    assert "which sentence" in intro and "position" in intro and "LayerNorm" in intro
    assert "GPT-2" not in intro and "Llama" not in intro and "BERT" not in intro
    assert "384 numbers for MiniLM" in words
    assert "12 heads" in words and "32 numbers each" in words  # MiniLM's own sizes
    assert "length" in _charts(at)["emb_norms"]["layout"]["yaxis"]["title"]["text"]
    assert "length of token" in at.dataframe[0].value.columns


def test_tiny_chars_sees_only_its_own_parts():
    at = _page(model="tiny-chars")
    words, intro = _words(at), _intro(at)
    for jargon in JARGON:
        assert jargon not in words, jargon
    assert "LayerNorm" not in words and "sentence" not in intro and "token type" not in words
    assert "fixed pattern of waves" in intro  # its positions are sinusoidal, not learned
    from ui.cache import get_model

    cfg = get_model("tiny-chars").cfg
    assert f"{cfg.d_head} numbers each" in words and f"{cfg.n_heads} heads" in words
    assert "MiniLM" not in words and "384" not in words


def test_rotary_model_says_it_adds_no_position_row(tmp_path):
    import tiny_models

    at = _page(model_dir=tiny_models.make_llama(tmp_path / "llama"))
    intro, words = _intro(at), _words(at)
    assert "adds no position row" in intro and "a row for its position" not in intro
    assert "position id" not in at.dataframe[0].value.columns
    assert "turn by an angle" in words


def test_short_sentence_labels_are_thinned_and_every_point_has_hover():
    at = _page()
    for key in ("emb_projection", "emb_qk"):
        points = [t for t in _charts(at)[key]["data"] if t.get("customdata") is not None]
        hover = [row[0] if isinstance(row, list) else row for t in points
                 for row in t["customdata"]]
        text = [s for t in points for s in t["text"]]
        n = len(at.dataframe[0].value)  # one point per token (two in the q/k plot)
        assert len(hover) == len(text) == n * (2 if key == "emb_qk" else 1)
        assert 0 < sum(1 for s in text if s) < len(text), key  # some named, not all


def test_lengths_table_has_fixed_decimals():
    """Lengths once read "7.19" and "6.99" beside "8.703" in one column."""
    import json

    at = _page("tiny-chars")
    table = next(d for d in at.main.dataframe if "length of token" in d.value.columns)
    formats = json.loads(table.proto.columns or "{}")
    lengths = [c for c in table.value.columns if str(c).startswith("length")]
    assert len(lengths) >= 3  # token, position, sum
    for column in lengths:
        assert formats.get(column, {}).get("type_config", {}).get("format") == "%.3f", column
