"""The logit lens opens on the first positions of the text (where reading starts), with every
column's label (its token and the true next token) shown, or the caption says which columns
are labelled when they would overlap."""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text  # noqa: E402

TEXT = "abcdefghijklmnopqrstuvwxyz" * 2  # 52 characters, all known to tiny-induction


def _lens(at) -> dict:
    (chart,) = [c for c in at.get("plotly_chart") if "lens_table" in str(c.proto.id)]
    return json.loads(chart.proto.spec)


def test_the_lens_opens_on_the_first_positions_with_every_label():
    at = open_page("logit-lens", "tiny-induction", TEXT)
    start, end = at.slider(key="lens_window").value
    assert start == 0 and end >= 3  # the first positions, several of them
    axis = _lens(at)["layout"]["xaxis"]
    assert len(axis["tickvals"]) == end + 1 and axis["tickvals"][0].startswith("0·")
    assert all("→" in t for t in axis["ticktext"])  # each with its true next token
    assert "one column in every" not in page_text(at, kinds=("caption",))


def test_a_wide_window_says_which_columns_are_labelled():
    at = open_page("logit-lens", "tiny-induction", TEXT)
    at.slider(key="lens_window").set_value((0, 47)).run()
    assert not at.exception
    axis = _lens(at)["layout"]["xaxis"]
    said = page_text(at, kinds=("caption",))
    assert len(axis["tickvals"]) < 48
    step = 48 // len(axis["tickvals"]) if len(axis["tickvals"]) * 2 > 48 else None
    assert "one column in every" in said, said
    if step:
        assert f"one column in every {step}" in said
