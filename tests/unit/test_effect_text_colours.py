"""The effect page's text coloured by one measure: every token in reading order, wrapped into
lines that fit the narrowest plot, its box red or blue by the value's sign, grey without a
value, token text escaped; the page's setting lists exactly the engine's measures."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.effect import METHODS
from teaching.pages import BY_PATH
from viz.effect import LINE_CHARS, word_lines, word_text, words_figure
from viz.labels import axis_labels


def test_one_box_per_token_in_reading_order_wrapped_to_the_line():
    tokens = ["[CLS]"] + [f"word{i % 7}" for i in range(340)] + ["[SEP]"]
    values = np.linspace(-1, 1, len(tokens))
    fig = words_figure(axis_labels(tokens), values, "Grad × input", "t")
    bar = fig.data[0]
    assert list(bar.text) == [word_text(lab) for lab in axis_labels(tokens)]
    lines, starts, lengths = (np.asarray(a, dtype=float) for a in (bar.y, bar.base, bar.x))
    assert lines.max() >= 20  # 342 tokens need many lines
    assert (starts + lengths <= LINE_CHARS + 1e-9).all()
    # reading order: along a line left to right, then the next line
    order = lines * 1000 + starts
    assert (np.diff(order) > 0).all()
    assert fig.layout.height >= 20 * 25  # every line gets room


def test_colours_follow_the_sign_and_grey_means_no_value():
    fig = words_figure(axis_labels(["a", "b", "c", "d"]), np.array([1.0, -1.0, 0.0, np.nan]),
                       "m", "t")
    colours = list(fig.data[0].marker.color)
    red, blue, white, grey = (tuple(int(x) for x in c[4:-1].split(",")) if c.startswith("rgb")
                              else c for c in colours)
    assert red[0] > red[2] and blue[2] > blue[0] and grey == "#cfcfcf"
    assert "no value" in fig.data[0].customdata[3][1]


def test_token_text_is_escaped_and_the_space_mark_dropped():
    labels = axis_labels(["<b>", "Ġcat", "Ġ"])
    assert [word_text(lab) for lab in labels] == ["&lt;b&gt;", "cat", "␣"]
    with pytest.raises(ValueError, match="one entry per token"):
        words_figure(labels, np.zeros(2), "m", "t")


def test_characters_sit_close_together():
    places = word_lines(list("abcdefgh"))
    gaps = [b[1] - (a[1] + a[2]) for a, b in zip(places, places[1:])]
    assert max(gaps) < 0.1


def test_the_page_setting_offers_exactly_the_engine_measures():
    setting = BY_PATH["effect"].by_name["words"]
    assert tuple(setting.choices) == tuple(METHODS) and setting.default in METHODS
