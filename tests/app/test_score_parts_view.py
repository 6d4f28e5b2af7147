"""The attention page's "Why this score" view: a linked cell opens taken apart, in plain words
with the run's own numbers (the same as analysis/score_parts.py gives), the parts' sum beside
the model's score; a cell the query cannot see says why in words; the choice is in the link."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from analysis.score_parts import decompose_cell, kind_shares, score_kinds  # noqa: E402
from page_links import open_with_sidebar, page_text  # noqa: E402
from app_pages.attention.score_parts import sentence  # noqa: E402

ATTENTION = "attention"
VIEW = "Why this score"
TEXT = "The cat sat on the mat."


def test_a_linked_cell_is_taken_apart_in_plain_words(minilm):
    params = {"text": TEXT, "layer": "1", "head": "2", "view": VIEW, "cq": "3", "ck": "2"}
    at = open_with_sidebar(ATTENTION, params=params)
    assert not at.exception
    cell = decompose_cell(minilm, minilm.run(TEXT), 1, 2, 3, 2)
    text = page_text(at, ("markdown", "caption"), unescape=False)
    assert sentence(kind_shares(score_kinds(cell)), False) in text
    assert f"{cell.score:.3f}" in text and "held at the size it had in this run" in text
    assert (at.selectbox(key="attn_cell_query").value, at.selectbox(key="attn_cell_key").value) \
        == (3, 2)
    at.selectbox(key="attn_cell_key").set_value(4).run()
    assert not at.exception and at.query_params.get("ck") == "4"


def test_a_key_the_query_cannot_see_is_explained(tiny_chars):
    params = {"text": "hello there", "view": VIEW, "cq": "1", "ck": "5"}
    at = open_with_sidebar(ATTENTION, "tiny-chars", params=params)
    assert not at.exception
    assert "reads left to right" in page_text(at, ("info",), unescape=False)


def test_an_encoder_decoder_takes_apart_its_decoder_and_cross_attention_scores():
    """T5: the encoder's cell by default; the decoder's self-attention (with its distance
    bias) and its cross-attention each on request, with the run's own numbers."""
    import tiny_seq2seq

    from analysis.seq2seq_score_parts import decompose_decoder_cell
    from model import load_model
    from app_pages.attention.score_parts import CROSS_FROZEN

    folder = str(tiny_seq2seq.folder("t5"))
    at = open_with_sidebar(ATTENTION, params={"model": folder, "text": TEXT, "view": VIEW,
                                              "cq": "3", "ck": "1"})
    assert not at.exception
    assert "a learned number for how far apart" in page_text(at, ("caption",), unescape=False)
    lm = load_model(folder, device="cpu")
    trace = lm.run(TEXT)
    for stack, (query, key) in (("decoder", (4, 2)), ("cross", (4, 3))):
        at = open_with_sidebar(ATTENTION, params={
            "model": folder, "text": TEXT, "view": VIEW, "cin": stack, "xlayer": "1",
            "xhead": "2", "cq": str(query), "ck": str(key)})
        assert not at.exception
        cell = decompose_decoder_cell(lm, trace, stack, 1, 2, query, key)
        text = page_text(at, ("markdown", "caption"), unescape=False)
        assert f"**{cell.score:.3f}**" in text and f"add up to {cell.total():.3f}" in text
        assert sentence(kind_shares(score_kinds(cell)), False, stack == "cross") in text
        assert (CROSS_FROZEN in text) == (stack == "cross")
        assert ("a learned number for how far apart" in text) == (stack == "decoder")
        assert "not taken apart" not in text
        at.toggle(key="attn_score_parts_each").set_value(True).run()  # per layer and head
        assert not at.exception
        names = at.get("plotly_chart")[-1].proto.spec
        assert "query's decoder" in names and ("key's encoder" in names) == (stack == "cross")
