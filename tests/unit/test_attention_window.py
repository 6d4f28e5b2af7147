"""The attention page's window on a long text (viz/heatmap_fit.py, app_pages/attention/window.py): no
cell narrower than the readable minimum, tick labels thinned by a rule that keeps neighbours
apart and that a sentence states, the whole token on hover, and the window kept in a link."""

from __future__ import annotations

import math

import numpy as np
import pytest

from teaching.pages import BY_PATH
from app_pages.attention.window import choose, parse_window, window_text
from ui.view_state import ViewState
from viz.attention import attention_heatmap
from viz.heatmap_fit import (MIN_CELL_PX, TICK_CHARS, TICK_FONT_PX, X_ANGLE, fit,
                             heatmap_margins, most_tokens, thinning_note, tick_text,
                             whole_labels)
from viz.labels import axis_labels
from viz.style import FULL_PAGE_PX, ROOM_NARROW_PX, ROOM_SCALE

LONG_N = 325  # ui.examples.LONG in MiniLM's tokens
# the columns a reader meets: 800 px with the sidebar open, 1024, 1400 with it open, 1920
COLUMNS = (FULL_PAGE_PX, 704, 940, 1600)


def _labels(n: int, word: str = "token") -> list[str]:
    return axis_labels([f"{word}{i}" for i in range(n)])


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("projector", [False, True])
def test_the_most_tokens_that_fit_have_readable_cells_and_one_more_would_not(column, projector):
    margin = heatmap_margins(_labels(LONG_N))
    most = most_tokens(LONG_N, column, margin, projector)
    assert 10 <= most < LONG_N
    drawn = fit(most, column, margin, projector)
    assert drawn.readable and min(drawn.cell_x, drawn.cell_y) >= MIN_CELL_PX
    assert not fit(most + 1, column, margin, projector).readable


def test_a_short_text_fits_whole_and_writes_every_label():
    margin = heatmap_margins(_labels(13))
    for column in COLUMNS:
        assert most_tokens(13, column, margin) == 13
        drawn = fit(13, column, margin)
        assert (drawn.x_step, drawn.y_step) == (1, 1)
    assert thinning_note(1, 1) == ""


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("projector", [False, True])
def test_written_labels_keep_a_font_height_apart_across_their_slant(column, projector):
    margin = heatmap_margins(_labels(LONG_N))
    font = TICK_FONT_PX * (ROOM_SCALE if projector else 1)
    for n in (20, most_tokens(LONG_N, column, margin, projector)):
        drawn = fit(n, column, margin, projector)
        across_x = drawn.x_step * drawn.cell_x * math.sin(math.radians(X_ANGLE))
        assert across_x >= font  # slanted x labels do not touch
        assert drawn.y_step * drawn.cell_y >= font  # nor do the y labels
        if drawn.x_step > 1:  # and no sparser than needed
            assert (drawn.x_step - 1) * drawn.cell_x * math.sin(math.radians(X_ANGLE)) < font + 1


def test_the_rule_is_stated_in_words():
    assert thinning_note(3, 3) == ("Not every label fits: every 3rd token is named on each "
                                   "axis, counted from the first one shown; hover any cell for "
                                   "its two tokens.")
    note = thinning_note(3, 2)
    assert "every 2nd token is named down the side" in note
    assert "every 3rd token along the bottom" in note


def test_the_heatmap_writes_every_kth_label_cut_short_and_hovers_the_whole_token():
    tokens = [f"w{i}" for i in range(30)]
    tokens[4] = "<b>averyveryverylongtoken</b>"
    labels = axis_labels(tokens)
    fig = attention_heatmap(np.full((30, 30), 1 / 30), tokens, tokens, tick_every=(3, 2))
    x, y = fig.layout.xaxis, fig.layout.yaxis
    assert list(x.tickvals) == labels[::3] and list(y.tickvals) == labels[::2]
    assert all(len(t.replace("&lt;", "<").replace("&gt;", ">")) <= TICK_CHARS
               for t in x.ticktext)
    cut = y.ticktext[2]  # position 4, cut and still escaped
    assert cut.startswith("4·&lt;b&gt;") and cut.endswith("…") and "<b>" not in cut
    assert tick_text(labels[4]) == cut
    # hover reads the categories: the label, position first, escaped
    assert list(fig.data[0].y) == labels and "%{y}" in fig.data[0].hovertemplate
    assert fig.data[0].hovertext is None  # nothing more to send
    # a token longer than a label: hover gets the whole of it, only then
    whole = whole_labels(tokens)
    assert whole[4] == "4·&lt;b&gt;averyveryverylongtoken&lt;/b&gt;" and whole[4] != labels[4]
    full = attention_heatmap(np.full((30, 30), 1 / 30), tokens, tokens, tick_every=(3, 2),
                             hover_labels=(whole, whole))
    assert full.data[0].hovertext[4][0] == f"query {whole[4]} → key 0·w0"
    assert "%{hovertext}" in full.data[0].hovertemplate
    same = attention_heatmap(np.full((25, 25), 1 / 25), labels[5:], labels[5:],
                             hover_labels=(whole[5:], whole[5:]))
    assert same.data[0].hovertext is None


def test_a_long_text_without_a_window_shows_the_first_tokens_that_fit():
    labels = _labels(LONG_N)
    window = choose(LONG_N, None, labels, None, room=False)  # not measured: the narrowest
    assert (window.first, window.last) == (0, window.most - 1) and not window.whole
    assert window.most == most_tokens(LONG_N, FULL_PAGE_PX, heatmap_margins(labels))
    wide = choose(LONG_N, None, labels, 1100, room=False)
    assert wide.most > window.most and wide.fit.readable
    room = choose(LONG_N, None, labels, None, room=True)
    assert room.column == ROOM_NARROW_PX and room.fit.readable
    assert choose(43, None, _labels(43), 1100, room=False).whole  # fits at 1400 px
    assert not choose(43, None, _labels(43), FULL_PAGE_PX, room=False).whole  # not at 800


def test_a_window_from_a_link_is_kept_narrowed_to_what_fits_or_refused_in_words():
    labels = _labels(LONG_N)
    asked = choose(LONG_N, "120-140", labels, 1100, room=False)
    assert (asked.first, asked.last, asked.note) == (120, 140, "")
    wide = choose(LONG_N, "120-300", labels, FULL_PAGE_PX, room=False)
    assert (wide.first, wide.last) == (120, 120 + wide.most - 1)
    assert "do not fit this screen" in wide.note and f"showing 120–{wide.last}" in wide.note
    past_end = choose(LONG_N, "300-400", labels, 1100, room=False)
    assert past_end.last == LONG_N - 1 and past_end.first == 300
    for bad in ("900-950", "abc", "50-10", "1-2-3"):
        refused = choose(LONG_N, bad, labels, 1100, room=False)
        assert refused.first == 0 and "does not have" in refused.note, bad


def test_parse_window_reads_first_last_and_nothing_else():
    assert parse_window("120-180") == (120, 180) and parse_window(" 3 – 9 ") == (3, 9)
    for bad in ("180-120", "12", "-3-4", "1e3-2e3", None, 5, "9999999-99999999"):
        assert parse_window(bad) is None, bad
    assert parse_window(window_text(7, 42)) == (7, 42)


def test_the_window_round_trips_through_a_link():
    view = ViewState("attention", "minilm", "some text", "", {"window": "120-180", "layer": 2})
    link = view.to_link()
    assert "window=120-180" in link
    query = dict(p.split("=", 1) for p in link.split("?", 1)[1].split("&"))
    back = ViewState.from_link("attention", query)
    assert back.settings["window"] == "120-180" and back.settings["layer"] == 2
    assert "window" in BY_PATH["attention"].by_name
    assert "window" not in ViewState.from_link("attention", {"model": "minilm"}).settings
