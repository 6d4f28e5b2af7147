"""The attention page (/attention): on a model with no Hugging Face counterpart and no special
tokens it offers no control that would do nothing; a long text opens on a head with a clear
pattern and says why (and that it shows a window of the text), while a link's layer and head
still win; a short text opens on layer 0, head 0."""

from __future__ import annotations

import os

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"

from analysis.head_stats import head_statistics  # noqa: E402
from page_links import open_with_sidebar, page_text  # noqa: E402
from ui.examples import LONG  # noqa: E402

ATTENTION = "attention"
KINDS = ("caption", "info", "markdown", "warning")


def _texts(at) -> str:
    return page_text(at, KINDS, unescape=False)


def test_attention_on_tiny_chars_offers_no_dead_controls():
    at = open_with_sidebar(ATTENTION, "tiny-chars")
    assert "attn_hide_special" not in [t.key for t in at.toggle]
    assert "attn_check_numbers" not in [b.key for b in at.button]
    assert "No check against Hugging Face here" in _texts(at)
    assert "own models" in _texts(at)
    at.selectbox(key="sb_model_choice").set_value("minilm").run()  # MiniLM keeps both
    assert "attn_hide_special" in [t.key for t in at.toggle]
    assert "attn_check_numbers" in [b.key for b in at.button]


def test_a_long_text_opens_on_a_clear_head_and_a_link_still_wins(minilm):
    trace = minilm.run(LONG)
    previous = head_statistics(trace.attentions, trace.tokens, trace.special_mask[0])["previous"]
    layer, head = np.unravel_index(previous.argmax(), previous.shape)
    assert (layer, head) != (0, 0)
    at = open_with_sidebar(ATTENTION, text=LONG)
    assert (at.slider(key="attn_layer").value, at.slider(key="attn_head").value) == (layer, head)
    text = _texts(at)
    assert f"opened on layer {layer}, head {head}" in text and "too many to draw" in text
    assert f"{previous[layer, head]:.0%} of each row" in text
    at.slider(key="attn_head").set_value((head + 1) % 12).run()
    assert "opened on" not in _texts(at) and "too many to draw" in _texts(at)

    linked = open_with_sidebar(ATTENTION, params={"text": LONG, "layer": "2", "head": "5"})
    assert (linked.slider(key="attn_layer").value, linked.slider(key="attn_head").value) == (2, 5)
    assert "opened on" not in _texts(linked)


def test_a_short_text_still_opens_on_layer_0_head_0():
    at = open_with_sidebar(ATTENTION)
    assert (at.slider(key="attn_layer").value, at.slider(key="attn_head").value) == (0, 0)
    assert "too many to draw" not in _texts(at)
