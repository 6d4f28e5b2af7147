"""The compare page's figures: the swap between text A and text B is named from the tokens
(a word of a character model as one word), and a long difference map opens zoomed on the
change, labelled, while a short one is shown whole."""

from __future__ import annotations

import numpy as np
import pytest

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


def _plot(fig) -> tuple[float, float]:
    m = fig.layout.margin
    return fig.layout.width - m.l - m.r, fig.layout.height - m.t - m.b


def test_a_zoomed_map_is_sized_by_its_window():
    """A and B of a 325-token text zoomed on 23 tokens were sized for all 325 (their margins
    fitted the longest of 325 labels): ~8 px cells in half a page."""
    from viz.attention import attention_heatmap

    tokens = [f"tok{i}" for i in range(300)] + ["averyveryverylongwordpiece"] * 25
    window = (0, 22)
    zoomed = attention_heatmap(np.full((325, 325), 1 / 325), tokens, tokens, max_width=460,
                               window=window)
    alone = attention_heatmap(np.full((23, 23), 1 / 23), tokens[:23], tokens[:23],
                              max_width=460)
    assert _plot(zoomed) == _plot(alone)
    assert _plot(zoomed)[0] / 23 >= 10


@pytest.mark.parametrize("column, room", [(467, False), (444, False), (976, True),
                                          (600, True)])
def test_compare_maps_fit_the_measured_column_with_square_cells(column, room):
    """At 800 px the difference map (43 characters) was narrowed by Streamlit into a strip of
    12 × 32 px cells; sized by the measured column it fits with square cells, in projector
    mode too (where it is grown for the room)."""
    from app_pages.compare import fitting_width
    from ui import projector

    text = "The cat sat on the mat because it was warm."
    a, b = list(text), list(text)
    b[5] = "o"
    rng = np.random.default_rng(0)
    fig = difference_heatmap(rng.random((43, 43)), rng.random((43, 43)), a, b, causal=True,
                             max_width=fitting_width(column, None, room))
    drawn = projector.enlarged(fig) if room else fig
    assert drawn.layout.width <= column
    w, h = _plot(drawn)
    assert w == pytest.approx(h, abs=2)


def test_projector_a_and_b_use_the_whole_width_when_stacked():
    """In projector mode at 1024 px A and B stack, each in a 976 px column, but stayed
    half-page size (a ~380 px plot); sized by the column they grow to fill the page."""
    from app_pages.compare import fitting_width
    from ui import projector
    from viz.attention import attention_heatmap

    tokens = list("The cat sat on the mat.")
    fig = attention_heatmap(np.full((23, 23), 1 / 23), tokens, tokens, causal=True,
                            max_width=fitting_width(976, 460, True))
    big = projector.enlarged(fig)
    assert big.layout.width <= 976 and _plot(big)[0] >= 600
