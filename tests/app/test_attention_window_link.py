"""The attention page's window on a long text (app_pages/attention/window.py): a link's
`window=first-last` reopens it, moving the slider writes it back into the link and a page
switch keeps it, the page says why it is zoomed and which labels it writes, and a window the
text does not have is refused in words. Without a browser the column's width is unknown, so
the page assumes the narrowest screen (800 px with the sidebar open)."""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, open_view, page_text, shown_view, switch  # noqa: E402
from app_pages.attention.window import choose  # noqa: E402
from ui.examples import LONG  # noqa: E402
from viz.labels import axis_labels  # noqa: E402

SLIDER = "attn_window_slider"
KINDS = ("caption", "info", "markdown", "warning")


def _heatmap_rows(at) -> int:
    """The rows of the main heatmap (the page's first figure)."""
    return len(json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["y"])


def test_a_long_text_opens_on_a_window_that_fits_and_says_so(minilm):
    trace = minilm.run(LONG)
    want = choose(trace.n_tokens, None, axis_labels(trace.tokens), None, room=False)
    at = open_page("attention", "minilm", LONG)
    assert at.slider(key=SLIDER).value == (0, want.last)
    text = page_text(at, KINDS, unescape=False)
    assert f"This text has {trace.n_tokens} tokens" in text
    assert f"shows tokens 0–{want.last}" in text
    assert f"every {want.fit.y_step}" in text and "hover any cell" in text
    assert _heatmap_rows(at) == want.last + 1


def test_the_window_goes_into_the_link_and_a_link_reopens_it():
    at = open_page("attention", "minilm", LONG)
    at.slider(key=SLIDER).set_value((100, 115)).run()
    assert not at.exception
    assert at.query_params["window"] in ("100-115", ["100-115"])
    assert _heatmap_rows(at) == 16
    view = shown_view(at, "attention")
    assert view.settings["window"] == "100-115"
    assert "window=100-115" in view.to_link()

    switch(at, "heads").run()  # away and back: the session keeps it
    switch(at, "attention").run()
    assert at.slider(key=SLIDER).value == (100, 115)

    again = open_view(view)  # the link, opened fresh
    assert again.slider(key=SLIDER).value == (100, 115)
    assert _heatmap_rows(again) == 16
    assert "Zoomed in" not in page_text(again, KINDS)  # it does not fit whole: says why
    assert "too many to draw readably" in page_text(again, KINDS)


def test_a_window_the_text_does_not_have_is_refused_in_words():
    at = open_page("attention", "minilm", LONG, window="900-950")
    text = page_text(at, KINDS, unescape=False)
    assert "does not have" in text and "tokens 900–950" in text
    assert at.slider(key=SLIDER).value[0] == 0


def test_a_short_text_shows_whole_with_no_window_control():
    at = open_page("attention", "minilm", "The cat sat on the mat because it was warm.")
    assert SLIDER not in [s.key for s in at.slider]
    assert _heatmap_rows(at) == 13
    assert "Not every label fits" not in page_text(at, KINDS)


def test_token_lines_draw_every_token_of_a_long_text_for_the_chosen_heads(minilm):
    at = open_page("attention", "minilm", LONG, view="Token lines", layer=1, head=3)
    lines = [c for c in at.get("bidi_component") if c.proto.id.endswith("attn_lines")]
    data = json.loads(lines[0].proto.json)
    trace = minilm.run(LONG)
    assert len(data["tokens"]) == trace.n_tokens  # no 60-token limit any more
    assert {h for *_, h in data["lines"]} == {3}
    strongest = trace.attentions[1, 3].argmax(-1)  # each query's strongest key is drawn
    drawn = {(q, k) for q, k, *_ in data["lines"]}
    assert all((q, int(strongest[q])) in drawn for q in range(trace.n_tokens))
    assert "scroll inside the box" in page_text(at, KINDS)
    at.multiselect(key="attn_line_heads").set_value([3, 7]).run()
    lines = [c for c in at.get("bidi_component") if c.proto.id.endswith("attn_lines")]
    assert {h for *_, h in json.loads(lines[0].proto.json)["lines"]} == {3, 7}


def test_a_short_text_zoomed_by_a_link_says_so_and_widens_back():
    at = open_page("attention", "minilm", "The cat sat on the mat because it was warm.",
                   window="2-8")
    assert at.slider(key=SLIDER).value == (2, 8) and _heatmap_rows(at) == 7
    assert "Zoomed in: the map shows tokens 2–8" in page_text(at, KINDS, unescape=False)
    at.slider(key=SLIDER).set_value((0, 12)).run()
    assert _heatmap_rows(at) == 13 and "Zoomed in" not in page_text(at, KINDS)
    assert not [c for c in at.caption if not c.value.strip()]  # no empty caption
