"""Plain words on each page's first screen, for someone who never heard of a head: where the
model runs, what a row of attention adds up to, what a logit is, what ablation measures, what
PCA and the table's width are, what the logit lens shows. Symbols and words such as "softmax"
or "unembedding" stay in the help tooltips."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, open_with_sidebar  # noqa: E402


def test_the_sidebar_says_where_the_model_runs_in_words():
    at = open_with_sidebar("attention")
    said = [c for c in at.sidebar.caption if c.value.startswith("Runs on")]
    assert [c.value for c in said] == ["Runs on the processor (CPU)"]  # no GPU on this machine
    assert "graphics card" in said[0].proto.help
    assert not [c for c in at.sidebar.caption if "Device:" in c.value]


def test_attention_says_rows_add_up_without_the_word_softmax():
    at = open_with_sidebar("attention")
    intro = next(c for c in at.caption if "Rows are queries" in c.value)
    assert "add up to 1" in intro.value and "softmax" not in intro.value
    assert "softmax" in intro.proto.help and "d_model" not in intro.value
    assert "every layer so far" in at.radio(key="attn_mode").help  # rollout, in plain words


def test_attribution_glosses_the_logit_before_saying_minilm_cannot():
    at = open_with_sidebar("attribution")
    first = at.caption[0].value
    assert "its *logit*" in first and "the small network after each attention layer" in first
    reason = " ".join(i.value for i in at.info)
    assert reason.startswith("Taking the score apart needs a decoder")
    assert "MiniLM is an encoder" in reason


def test_ablation_names_its_effects_in_words_and_keeps_the_units_in_the_table():
    at = open_with_sidebar("ablation")  # a short text: every head is measured
    options = at.radio(key="abl_metric").options
    assert options == ["How far the sentence vector turns", "How far token vectors turn"]
    assert "nats" not in " ".join(options) and "cosine" not in " ".join(options)
    assert "1 − cosine" in at.radio(key="abl_metric").help  # the measure, for who wants it


def test_positions_explains_pca_and_the_width_symbol():
    said = " ".join(c.value for c in open_with_sidebar("positions").caption)
    assert "PCA (principal component analysis)" in said
    assert "d_model is the table's width" in said


def test_lens_first_screen_has_no_jargon():
    at = open_page("logit-lens", "tiny-chars", "The cat sat on the mat.")
    intro = at.caption[0]
    assert "turned into a probability for every token" in intro.value
    for word in ("unembedding", "softmax", "final norm", "residual stream"):
        assert word not in intro.value
    assert "unembedding" in intro.proto.help and "softmax" in intro.proto.help  # for the curious
