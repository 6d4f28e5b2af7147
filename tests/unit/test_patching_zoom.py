"""Patching on a long prompt: the residual grid opens on the changed positions and the read
one, every column wide enough for its label on the narrowest plot, "⋯" columns standing for
the rest; the changed columns are framed; and both prompts show the changed words."""

from __future__ import annotations

import numpy as np

from app_pages.patching.change import change_lines
from viz.patching import (
    CHANGED_COLOUR, GAP, ZOOM_CELL_PX, position_labels, residual_grid, zoom_columns,
)
from viz.style import COLORBAR_MARGIN, FULL_PAGE_PX

ROWS = [f"into layer {i}" for i in range(6)] + ["out of layer 5"]


def _pair(n: int, changed: int):
    clean = [f"w{i}" for i in range(n)]
    corrupted = list(clean)
    corrupted[changed] = "other"
    return clean, corrupted


def test_a_short_grid_shows_every_position():
    assert zoom_columns(13, [5], 12, ROWS) is None


def test_a_long_grid_opens_on_the_change_and_the_read_position():
    columns = zoom_columns(128, [40], 127, ROWS)
    shown = [p for p in columns if p is not GAP]
    assert 40 in shown and 127 in shown and {39, 41, 126} <= set(shown)
    assert columns[0] is GAP and GAP in columns[1:]  # positions left out before and between
    assert shown == sorted(shown) and len(shown) < 20
    # every column, gaps included, at least ZOOM_CELL_PX wide on the narrowest plot
    plot_px = FULL_PAGE_PX - COLORBAR_MARGIN - 60
    assert plot_px / len(columns) >= ZOOM_CELL_PX - 1


def test_many_changes_keep_fewer_neighbours_to_fit():
    changed = [10, 30, 50, 70]
    columns = zoom_columns(128, changed, 127, ROWS)
    shown = [p for p in columns if p is not GAP]
    assert set(changed + [127]) <= set(shown)
    assert len(columns) <= (FULL_PAGE_PX - COLORBAR_MARGIN - 60) // ZOOM_CELL_PX + 1


def test_the_zoomed_grid_draws_only_those_columns_with_gaps_said():
    clean, corrupted = _pair(128, 40)
    labels = position_labels(clean, corrupted)
    z = np.arange(7 * 128, dtype=float).reshape(7, 128) / 1000
    columns = zoom_columns(128, [40], 127, ROWS)
    fig = residual_grid(z, labels, ROWS, "t", marked_pos=127, marked_cols=[40],
                        columns=columns)
    drawn = np.asarray(fig.data[0].z, dtype=float)
    assert drawn.shape == (7, len(columns))
    for i, p in enumerate(columns):
        if p is GAP:
            assert np.isnan(drawn[:, i]).all()
        else:
            np.testing.assert_allclose(drawn[:, i], z[:, p])
    ticks = list(fig.layout.xaxis.ticktext)
    assert "40·w40→other" in ticks and "127·w127" in ticks
    assert "⋯ 37 more" in ticks  # positions 0–36 before the first shown one
    frames = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    assert len(frames) == 1 and frames[0].line.color == CHANGED_COLOUR
    assert frames[0].x0 == columns.index(40) - 0.5
    black = [s for s in fig.layout.shapes if s.line.color == "black"]
    assert len(black) == 1 and black[0].x0 == columns.index(127) - 0.5


def test_the_full_grid_frames_the_changed_columns_too():
    clean, corrupted = _pair(13, 5)
    fig = residual_grid(np.zeros((7, 13)), position_labels(clean, corrupted), ROWS, "t",
                        marked_pos=12, marked_cols=[5])
    assert [s.x0 for s in fig.layout.shapes if s.line.dash == "dot"] == [4.5]


def test_both_prompts_show_the_changed_word_highlighted_and_escaped():
    text = change_lines("The cat sat on the *mat*.", "The dog sat on the *mat*.")
    clean, corrupted = text.split("  \n")
    assert ":orange-background[**cat**]" in clean and "dog" not in clean
    assert ":orange-background[**dog**]" in corrupted
    assert r"\*mat\*" in clean  # the user's asterisks stay asterisks
    assert change_lines("same", "same") == ""


def test_a_change_deep_in_a_long_prompt_is_shown_with_its_neighbours_only():
    words = [f"word{i}" for i in range(300)]
    changed = list(words)
    changed[150] = "banana"
    text = change_lines(" ".join(words), " ".join(changed))
    assert "banana" in text and "word150" in text and "word148" in text
    assert "word10 " not in text and text.count("…") >= 4  # cut before and after, both lines
