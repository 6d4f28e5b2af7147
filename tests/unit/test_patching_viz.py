"""The patching figures: position labels mark where the prompts differ, the changed positions
stay labelled when labels are thinned, user text is escaped, and shapes are checked."""

from __future__ import annotations

import numpy as np
import pytest

from viz.patching import MAX_TICKS, position_labels, residual_grid


def test_labels_mark_the_changed_positions_and_escape_text():
    labels = position_labels(["The", " cat", "<b>"], ["The", " dog", "<b>"])
    assert labels == ["0·The", "1·␣cat→␣dog", "2·&lt;b&gt;"]
    with pytest.raises(ValueError, match="same length"):
        position_labels(["a"], ["a", "b"])


def test_the_grid_keeps_the_changed_position_labelled_and_checks_shapes():
    clean = [f"t{i}" for i in range(63)]
    corrupted = list(clean)
    corrupted[5] = "x"
    labels = position_labels(clean, corrupted)
    z = np.linspace(-0.5, 1.2, 7 * 63).reshape(7, 63)
    fig = residual_grid(z, labels, [f"row {i}" for i in range(7)], "<i>title</i>",
                        marked_pos=62, marked_cols=[5])
    ticks = list(fig.layout.xaxis.tickvals)
    assert 5 in ticks and 62 in ticks and len(ticks) <= MAX_TICKS + 2
    assert "5·t5→x" in fig.layout.xaxis.ticktext
    assert fig.layout.title.text == "&lt;i&gt;title&lt;/i&gt;"
    np.testing.assert_allclose(np.asarray(fig.data[0].z), z)
    assert fig.data[0].zmid == 0 and fig.data[0].zmax >= 1.2  # 1 = clean is always on the scale
    assert len(fig.layout.shapes) == 1  # the metric's column is outlined
    with pytest.raises(ValueError, match="row names"):
        residual_grid(z, labels[:-1], [f"row {i}" for i in range(7)], "t")


def test_cell_numbers_fit_their_cells_and_neighbouring_labels_are_thinned():
    """At 800 px MiniLM's cells are ~20 px wide: a fixed 10 px "0.00" ran into the next cell.
    With no fixed size plotly fits the font to the cell. A decoder's 23 positions: no two
    neighbours labelled (they overlapped), the changed and the read positions kept."""
    from viz.patching import THIN_ABOVE
    clean = list("the cat sat on the mat.")
    corrupted = list(clean)
    corrupted[19:22] = list("rug")
    fig = residual_grid(np.zeros((3, 23)), position_labels(clean, corrupted),
                        ["a", "b", "c"], "t", marked_pos=22, marked_cols=[19, 20, 21])
    ticks = list(fig.layout.xaxis.tickvals)
    assert 22 in ticks and 20 in ticks and len(ticks) <= THIN_ABOVE  # read, one changed
    assert all(b - a > 1 for a, b in zip(ticks, ticks[1:]))  # no two neighbours
    assert len(ticks) >= 23 // 2  # about every other one
    short = residual_grid(np.zeros((7, 13)), [f"{i}·t" for i in range(13)],
                          [f"row {i}" for i in range(7)], "t")
    assert list(short.layout.xaxis.tickvals) == list(range(13))  # few: all labelled
    assert short.data[0].texttemplate and short.data[0].textfont.size is None  # fitted
