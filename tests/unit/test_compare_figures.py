"""The compare page's figures: the swap between text A and text B is named from the tokens
(a word of a character model as one word), and a long difference map opens zoomed on the
change, labelled, while a short one is shown whole."""

from __future__ import annotations

import numpy as np

from viz.compare import (ZOOM_CONTEXT, changed_runs, describe_changes, difference_heatmap,
                         zoom_window)


def _subtitle(fig) -> str:
    return fig.layout.title.subtitle.text.replace("<br>", " ")


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


def test_a_change_in_text_without_spaces_is_named_by_its_characters():
    """A character model's text with no spaces is one long "word": naming it whole said
    "tokens 0–47: “abcabc…” → “bbcabc…”" for one changed letter."""
    text = "abc" * 16
    changed = "b" + text[1:]
    assert describe_changes(list(text), list(changed)) == "token 0: “a” → “b”"
    middle = text[:20] + "zz" + text[22:]
    assert describe_changes(list(text), list(middle)) == "tokens 20–21: “ca” → “zz”"


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
