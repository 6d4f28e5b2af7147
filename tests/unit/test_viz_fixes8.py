"""Review 8a in the figures: the one-head heatmap says when its colours are stretched (15),
the difference map names and zooms on a swap (2), the all-heads subtitle in plain words (11)."""

from __future__ import annotations

import numpy as np
import pytest

from viz.attention import attention_heatmap
from viz.compare import (ZOOM_CONTEXT, changed_runs, describe_changes, difference_heatmap,
                         zoom_window)
from viz.overview import head_overview, squeezed_note


def _subtitle(fig) -> str:
    return fig.layout.title.subtitle.text.replace("<br>", " ")


def test_a_faint_head_says_its_colours_are_stretched():
    faint = np.full((4, 4), 0.25)
    fig = attention_heatmap(faint, list("abcd"), list("abcd"))
    assert "colours stretched: yellow = 0.25 (largest weight), not 1" in _subtitle(fig)
    sharp = np.eye(4)
    assert "stretched" not in _subtitle(attention_heatmap(sharp, list("abcd"), list("abcd")))
    shared = attention_heatmap(faint, list("abcd"), list("abcd"), zmax=0.5)
    assert shared.data[0].zmax == 0.5 and "yellow = 0.50, not 1" in _subtitle(shared)
    signed = attention_heatmap(faint - 0.5, list("abcd"), list("abcd"))  # not weights: no note
    assert "stretched" not in _subtitle(signed)


def test_the_swap_is_named_from_the_tokens():
    a = ["[CLS]", "a", "sentence", "of", "words", "[SEP]"]
    b = ["[CLS]", "a", "paragraph", "of", "words", "[SEP]"]
    assert changed_runs(a, b) == [(2, 2)]
    assert describe_changes(a, b) == "token 2: “sentence” → “paragraph”"
    chars_a, chars_b = list("The old man."), list("The red man.")
    assert describe_changes(chars_a, chars_b) == "tokens 4–6: “old” → “red”"  # the word
    many_a = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    many_b = ["ONE", "two", "THREE", "four", "FIVE", "six", "SEVEN", "eight", "NINE"]
    assert describe_changes(many_a, many_b, limit=2).endswith("and 3 more")
    assert describe_changes(a, a) == ""


def test_a_long_difference_map_opens_zoomed_on_the_change():
    n = 200
    tokens_a = [f"t{i}" for i in range(n)]
    tokens_b = list(tokens_a)
    tokens_b[100] = "swapped"
    assert zoom_window(tokens_a, tokens_b) == (100 - ZOOM_CONTEXT, 100 + ZOOM_CONTEXT)
    a = np.full((n, n), 1 / n)
    b = a.copy()
    b[100] = 0
    b[100, 100] = 1
    fig = difference_heatmap(a, b, tokens_a, tokens_b)
    assert tuple(fig.layout.xaxis.range) == (84.5, 115.5)
    assert tuple(fig.layout.yaxis.range) == (115.5, 84.5)  # queries read downwards
    assert fig.layout.xaxis.showticklabels  # 31 tokens: labelled, though the map has 200
    assert "zoomed on tokens 85–115" in _subtitle(fig)
    short = difference_heatmap(a[:10, :10], b[:10, :10], tokens_a[:10], tokens_a[:10])
    assert short.layout.xaxis.range is None  # a short map is shown whole
    assert zoom_window(tokens_a, tokens_a) is None  # nothing changed: nothing to zoom on


def test_the_all_heads_subtitle_says_block_maxima_in_plain_words():
    assert "about 5×5 token pairs and shows the strongest" in squeezed_note(325, 64)
    assert "covers 2×2 token pairs" in squeezed_note(128, 64)
    sub = _subtitle(head_overview(np.random.default_rng(0).random((1, 2, 130, 130))))
    assert "block maxima" not in sub and "squeezed into 64×64 squares" in sub
    with pytest.raises(ValueError):
        head_overview(np.zeros((1, 1, 3, 4)))
