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
