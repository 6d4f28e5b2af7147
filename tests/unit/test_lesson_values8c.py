"""Review 8c: the "0%" in the answered question row were 9 px text (about 8 px on screen).
The numbers are written at a readable size that fits the squares on the narrowest plot, or
not at all (the hover has them)."""

from __future__ import annotations

import numpy as np

from viz.lesson import MIN_TEXT_PX, blind_heatmap


def _shown(n: int):
    tokens = ["[CLS]"] + [f"w{i}" for i in range(n - 2)] + ["[SEP]"]
    values = np.zeros(n)
    values[2] = 1.0  # a "100%" square: the widest number
    return blind_heatmap(tokens, 3, "Row", values)


def test_the_answered_rows_numbers_are_readable_or_absent():
    for n in (5, 9, 13, 18, 24, 30):
        fig = _shown(n)
        written = [t for t in fig.data[2].text[3] if t]
        if written:
            assert fig.data[2].textfont.size >= MIN_TEXT_PX >= 12, n
        else:
            assert "hover" in fig.layout.title.subtitle.text, n


def test_the_reviewers_row_keeps_its_numbers_and_says_the_unit():
    fig = _shown(13)  # the lesson's sentence: 13 keys
    text = list(fig.data[2].text[3])
    assert all(text) and fig.data[2].textfont.size >= 12
    if not text[2].endswith("%"):  # the sign did not fit: the subtitle gives it
        assert "in %" in fig.layout.title.subtitle.text
    assert text[2].rstrip("%") == "100"
