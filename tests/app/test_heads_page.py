"""The head-statistics page (/heads): its table fits the main column of an 800 px screen (the
chosen statistic first, layer and head in one narrow column, percentages, no row-selection
column) and shows every column its intro and caption name; the intro speaks of the model's own
special tokens (or of the first token, for a model without any); the example head it names is
one the model has; the entropy formula stays on one line."""

from __future__ import annotations

import json
import os
import re

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text, start_app, switch  # noqa: E402

HEADS = "heads"
TEXT = "The cat sat on the mat."
# The main column of an 800 px window with the sidebar open (measured on a screenshot); a
# selectable st.dataframe would add a row-selection checkbox column of 32 px.
NARROW_MAIN_PX = 467


def _table(at):
    """The statistics table (the page's one table with a "head" column) and its column config."""
    (table,) = [d for d in at.dataframe if "head" in d.value.columns]
    return table, table.value, json.loads(table.proto.columns)


def test_heads_table_is_narrow_enough_for_a_small_screen():
    at = start_app()
    switch(at, HEADS).run()
    at.selectbox(key="hs_stat").set_value("previous").run()
    assert not at.exception
    _, frame, config = _table(at)
    assert list(frame.columns[:2]) == ["head", "To the previous token"]  # chosen first
    assert frame["head"].iloc[0] == "L0 H2"  # layer and head in one narrow column
    top = frame["To the previous token"].iloc[0]
    assert 1 < top <= 100 and frame["To the previous token"].is_monotonic_decreasing  # percent
    column = config["To the previous token"]
    assert column["label"] == "Prev" and column["type_config"]["format"] == "%.0f%%"
    assert column["width"] <= 72 and config["Entropy (bits)"]["type_config"]["format"] == "%.2f"
    # every column fits the 467 px main column of an 800 px screen
    assert sum(c.get("width", 0) for c in config.values()) <= NARROW_MAIN_PX


def test_heads_table_shows_every_column_the_caption_names_at_800():
    at = open_page(HEADS, "minilm", TEXT)
    table, frame, config = _table(at)
    assert frame.columns[0] == "head" and frame["head"].str.fullmatch(r"L\d+ H\d+").all()
    assert table.proto.selection_mode == []  # no checkbox column eating the width
    assert sum(config[c]["width"] for c in frame.columns) <= NARROW_MAIN_PX
    labels = [config[c]["label"] for c in frame.columns[1:]]
    (caption,) = [c.value for c in at.caption if "the share (in %)" in c.value]
    for label in labels:  # every header fits its column; the caption names every one
        assert 7 * len(label) + 16 <= config[frame.columns[1 + labels.index(label)]]["width"]
        assert label in caption
    assert {"Prev", "Self", "Next", "Spec", "First", "Punct", "Dist", "Entropy"} <= set(labels)


def test_heads_table_shows_the_intros_columns_on_an_800_px_screen():
    at = open_page(HEADS, "minilm", TEXT)
    table, frame, config = _table(at)
    wanted = ["To the previous token", "To itself", "To the next token",
              "Mean distance (tokens)"]
    assert list(frame.columns[:6]) == ["head", "Entropy (bits)", *wanted]
    # no row selection (its checkbox column would take 32 px): every column fits
    assert not table.proto.selection_mode
    used = sum(config[c]["width"] for c in frame.columns)
    assert used <= NARROW_MAIN_PX
    for column in wanted:  # each header fits its column (about 7 px a letter, 16 px padding)
        assert 7 * len(config[column]["label"]) + 16 <= config[column]["width"]


def test_heads_intro_names_the_models_own_special_tokens():
    at = open_page(HEADS, "minilm", TEXT)
    intro = at.caption[0].value.replace("\\", "")
    assert "park their attention on [CLS] or [SEP]" in intro
    assert "To special tokens" in at.selectbox(key="hs_stat").options

    at = open_page(HEADS, "tiny-chars", TEXT)
    intro = at.caption[0].value
    assert "[SEP]" not in intro and "park their attention on the first token" in intro
    assert "To special tokens" not in at.selectbox(key="hs_stat").options
    (table,) = [d.value for d in at.dataframe if "head" in d.value.columns]
    assert "To special tokens" not in table.columns  # it would be all zeros
    assert "Special" not in page_text(at)


def test_the_example_head_is_one_the_model_has(tiny_chars):
    """The caption's example head is read from the model (a fixed "L5 H6" would not exist in
    tiny-chars, 2 layers of 4 heads), and the entropy formula does not break across lines."""
    cfg = tiny_chars.cfg
    at = open_page(HEADS, "tiny-chars", TEXT)
    captions = " ".join(c.value for c in at.caption)
    found = re.findall(r"Head “L(\d+) H(\d+)”: layer (\d+), head (\d+)", captions)
    assert found, captions
    for lay, head, lay2, head2 in found:
        assert lay == lay2 and head == head2
        assert int(lay) < cfg.n_layers and int(head) < cfg.n_heads
    # the entropy formula is one unbreakable KaTeX group: "${H_i = ...}$"
    assert at.selectbox(key="hs_stat").value == "entropy"
    text = " ".join(m.value for m in at.markdown)
    assert "${H_i = " in text and "$H_i = " not in text.replace("${H_i", "")


def _button_column(at):
    """The column holding "Open on the attention page"."""
    return next(c for c in at.columns
                if any(b.key == "hs_open_btn" for b in c.get("button")))


def test_open_button_gets_half_the_row_in_projector_mode():
    """At projector mode's 22 px font the button's label wrapped to two lines in a quarter of
    the row (sweep: /heads at 1024 × 768); there it gets half the row, a quarter otherwise."""
    normal = open_page(HEADS, "minilm")
    room = open_page(HEADS, "minilm", projector=1)
    assert not normal.exception and not room.exception
    assert _button_column(normal).weight == 0.25
    assert _button_column(room).weight == 0.5
