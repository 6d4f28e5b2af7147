"""The attention figures in plain words: a one-head heatmap says when its colours are stretched
(a faint head's largest weight is yellow, not 1), and the all-heads overview of a long text says
how many token pairs each square covers instead of "block maxima"."""

from __future__ import annotations

import numpy as np
import pytest

from viz.attention import attention_heatmap
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


def test_the_all_heads_subtitle_says_block_maxima_in_plain_words():
    assert "about 5×5 token pairs and shows the strongest" in squeezed_note(325, 64)
    assert "covers 2×2 token pairs" in squeezed_note(128, 64)
    sub = _subtitle(head_overview(np.random.default_rng(0).random((1, 2, 130, 130))))
    assert "block maxima" not in sub and "squeezed into 64×64 squares" in sub
    with pytest.raises(ValueError):
        head_overview(np.zeros((1, 1, 3, 4)))
