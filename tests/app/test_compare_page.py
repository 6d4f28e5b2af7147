"""The compare page (/compare): text B starts as text A with one word the model reads swapped,
follows A until the user types a B of their own, and the difference map opens for any A (one
longer than the model's context too); B equal to A draws no figures; the swap is named and the
maps open zoomed on it, on the head where it changes attention most."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from chart_data import chart_specs as _charts, plotly_array as _array  # noqa: E402
from page_links import open_with_sidebar, page_text, start_app, switch  # noqa: E402
from ui.examples import LONG  # noqa: E402

COMPARE = "compare"
LONG_A = ("A lighthouse keeper climbed the stairs every night to light the lamp, and the "
          "ships far out at sea saw it shine across the dark water.")
DECLONG = ("The old lighthouse keeper climbed the stairs every evening to light the lamp. The "
           "sea was loud and the wind was cold, and far away a ship was looking for the harbour "
           "in the dark. He thought about his daughter, who lived in the city now, and about "
           "the long winter that was coming.")
KINDS = ("caption", "info", "markdown", "warning")


def _texts(at) -> str:
    return page_text(at, KINDS, unescape=False)


@pytest.fixture(scope="module")
def declong_compare():
    return open_with_sidebar(COMPARE, "tiny-chars", DECLONG)


def test_compare_opens_on_a_difference_map_for_any_text_a():
    at = start_app(LONG_A)
    switch(at, COMPARE).run()
    assert not at.exception
    b = at.text_area(key="cmp_text_b").value
    assert b != LONG_A and len(b.split()) == len(LONG_A.split())  # one word swapped
    assert sum(x != y for x, y in zip(b.split(), LONG_A.split())) == 1
    assert "No difference map" not in " ".join(i.value for i in at.info)
    assert {"cmp_diff", "cmp_heads"} <= set(_charts(at))

    # B follows A while the user has not typed one ...
    at.text_area(key="sb_text").input("The big red car stopped at the light.").run()
    assert not at.exception
    assert at.text_area(key="cmp_text_b").value.startswith("The small red car")
    assert "cmp_diff" in _charts(at)
    # ... and a B the user typed is kept when A changes
    at.text_area(key="cmp_text_b").input("My own sentence here.").run()
    at.text_area(key="sb_text").input("Another text for A.").run()
    assert not at.exception
    assert at.text_area(key="cmp_text_b").value == "My own sentence here."


def test_compare_swaps_a_word_the_model_reads_on_a_text_longer_than_its_context(
        declong_compare):
    at = declong_compare
    text_b = at.text_area(key="cmp_text_b").value
    assert text_b != DECLONG and text_b.endswith(DECLONG[-80:])  # the swap is near the start
    charts = _charts(at)
    diff = _array(charts["cmp_diff"]["data"][0]["z"])
    assert np.nanmax(np.abs(diff)) > 0  # something moves on the first view
    text = _texts(at)
    assert "“old” → “red”" in text  # the swap, named from the two runs
    assert "Like A, B runs on its first 64 tokens" in text
    assert not [w for w in at.warning if "Text B is longer" in w.value]  # no second warning
    heat = charts["cmp_heads"]["data"][0]
    assert heat["zmin"] == 0 and heat["zmax"] > 0  # |B − A| never goes below 0


def test_compare_b_equal_to_a_draws_no_figures(declong_compare):
    at = declong_compare
    at.button(key="cmp_copy").click().run()
    assert not at.exception
    assert "B is the same as A: change a word in B to see what moves." in _texts(at)
    assert not _charts(at)  # no grey triangle, no grid of zeros
    at.text_area(key="cmp_text_b").input(DECLONG + " And more words after the cut.").run()
    assert not at.exception
    assert "only after the first 64 tokens" in _texts(at) and not _charts(at)


def test_compare_names_and_zooms_on_the_swap_in_a_long_text():
    at = open_with_sidebar(COMPARE, text=LONG)
    text = _texts(at)
    assert "token 7\\: “sentence” → “paragraph”" in text  # [CLS] is token 0 (":" escaped)
    layout = _charts(at)["cmp_diff"]["layout"]
    first, last = layout["xaxis"]["range"]
    assert first == -0.5 and last == pytest.approx(7 + 15 + 0.5)  # ±15 tokens around token 7
    assert layout["xaxis"]["showticklabels"]  # the zoomed tokens are labelled
    subtitle = layout["title"]["subtitle"]["text"].replace("<br>", " ")
    assert "double-click to see all 325" in subtitle
    for name in ("cmp_a", "cmp_b"):  # A and B open on the same window, labelled
        ab = _charts(at)[name]["layout"]
        assert ab["xaxis"]["range"] == layout["xaxis"]["range"] and ab["xaxis"]["showticklabels"]
        assert ab["yaxis"]["range"] == [last, first]
    per_head = _array(_charts(at)["cmp_heads"]["data"][0]["z"])
    layer, head = np.unravel_index(per_head.argmax(), per_head.shape)
    assert (at.slider(key="cmp_layer").value, at.slider(key="cmp_head").value) == (layer, head)
