"""/effect behaves the same for every model: it opens with what can be measured at once (an
encoder, a decoder, a long text) and says in one line what waits for a click."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text  # noqa: E402

REPEATED = "abcdefghijklmnopqrstuvw" * 2  # 46 characters: tiny-induction reads 48


def _charts(at) -> set:
    return {str(c.proto.id) for c in at.get("plotly_chart")}


def test_a_decoder_opens_measured_and_says_what_waits():
    at = open_page("effect", "tiny-induction", REPEATED)
    assert not at.exception
    assert any("eff_strip" in c for c in _charts(at))  # measured without a click
    said = page_text(at, kinds=("caption",))
    assert "Shown now: integrated gradients with" in said and "wait for the button" in said
    assert any(b.key == "eff_run" for b in at.button)
    at.button(key="eff_run").click().run()
    assert not at.exception
    assert "Shown now" not in page_text(at, kinds=("caption",))  # the chosen steps ran
    assert any("eff_strip" in c for c in _charts(at))


def test_a_short_text_runs_in_full_with_nothing_waiting():
    at = open_page("effect", "tiny-induction", "abcabc")
    assert any("eff_strip" in c for c in _charts(at))
    assert not any(b.key == "eff_run" for b in at.button)
    assert "Shown now" not in page_text(at, kinds=("caption",))
