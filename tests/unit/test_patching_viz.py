"""The patching figures: position labels mark where the prompts differ, the changed positions
stay labelled when labels are thinned, user text is escaped, shapes are checked, and on the
narrowest screen no cell number is drawn below 9 px and no two tick labels crowd."""

from __future__ import annotations

import math

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
    outlined = [s for s in fig.layout.shapes if s.line.color == "black"]
    assert len(outlined) == 1 and outlined[0].x0 == 61.5  # the metric's column is outlined
    assert [s.x0 for s in fig.layout.shapes if s.line.dash == "dot"] == [4.5]  # the change
    with pytest.raises(ValueError, match="row names"):
        residual_grid(z, labels[:-1], [f"row {i}" for i in range(7)], "t")


def _narrow(fig, n_pos: int) -> tuple[float, float]:
    """The cell width (px) and the tick angle on the narrowest plot the app shows: the main
    column beside the open sidebar on an 800 px screen, less this figure's own margins."""
    from viz.style import FULL_PAGE_PX
    m = fig.layout.margin
    return (FULL_PAGE_PX - m.l - m.r) / n_pos, abs(fig.layout.xaxis.tickangle)


def _plotly_text_px(fig, cell_px: float) -> int:
    """The size plotly.js gives heatmap text with no textfont.size: the cell width less the
    gap over 0.65 × the longest label's characters, at most the page's 13 px."""
    chars = max(len(t) for row in fig.data[0].text for t in row)
    return min(13, math.floor((cell_px - fig.data[0].xgap) / (0.65 * chars)))


def _grid(n_rows: int, n_pos: int, z=None, **kw):
    clean = [f"t{i}" for i in range(n_pos)]
    z = np.linspace(0, 1, n_rows * n_pos).reshape(n_rows, n_pos) if z is None else z
    rows = [f"into layer {i}" for i in range(n_rows - 1)] + [f"out of layer {n_rows - 2}"]
    return residual_grid(z, position_labels(clean, clean), rows, "t", **kw)


def test_cell_numbers_are_drawn_only_where_plotly_gives_them_13_px_at_800_wide():
    """At 800 px plotly shrank MiniLM's "0.00" to ~6 px; with a 9 px rule its
    "0.0" still measured ~7 px tall (a digit is ~0.7 of the font size). Numbers
    are now drawn only when plotly's own fit, on the narrowest plot, is the page's 13 px;
    MiniLM's 13-token grid keeps its values in the hover."""
    from viz.patching import MIN_TEXT_PX
    assert MIN_TEXT_PX >= 13
    minilm = _grid(7, 13, marked_pos=12, marked_cols=[2])  # MiniLM: 6 layers, 13 tokens
    assert minilm.data[0].text is None and not minilm.data[0].texttemplate  # hover only
    short = _grid(7, 6)
    cell, _ = _narrow(short, 6)
    assert short.data[0].textfont.size is None and short.data[0].texttemplate == "%{text}"
    assert _plotly_text_px(short, cell) >= MIN_TEXT_PX
    few = _grid(3, 5)  # wide cells: two decimals fit
    assert few.data[0].text[2][4] == "1.00" and _plotly_text_px(few, _narrow(few, 5)[0]) >= 9
    assert _grid(3, 5, z=np.full((3, 5), -0.001)).data[0].text[0][0] == "0.00"  # no "-0.00"
    for n_rows, n_pos in ((3, 23), (7, 20), (7, 64)):  # a sentence on a character model
        fig = _grid(n_rows, n_pos)
        assert fig.data[0].text is None and not fig.data[0].texttemplate  # hover only
    signed = _grid(7, 13, z=np.linspace(-3.2, 2.9, 91).reshape(7, 13))  # "-3.2": too long
    assert signed.data[0].text is None


@pytest.mark.parametrize("n_pos, marked, changed", [(13, 12, [2]), (23, 22, [19, 20, 21]),
                                                     (23, 22, [22]), (40, 39, [3]),
                                                     (128, None, [5])])
def test_tick_labels_never_crowd_on_the_narrowest_plot(n_pos, marked, changed):
    """Slanted labels of neighbouring ticks stay TICK_GAP_PX apart at 800 px (the decoder's
    "19·m→r20·a→u21·t→g" ran together); the read position and a changed one stay labelled."""
    from viz.patching import TICK_GAP_PX
    fig = _grid(3 if n_pos == 23 else 7, n_pos, marked_pos=marked, marked_cols=changed)
    cell, angle = _narrow(fig, n_pos)
    ticks = list(fig.layout.xaxis.tickvals)
    gaps = [(b - a) * cell * math.sin(math.radians(angle)) for a, b in zip(ticks, ticks[1:])]
    assert min(gaps) >= TICK_GAP_PX
    assert marked is None or marked in ticks
    assert set(changed) & set(ticks)
    assert len(ticks) >= n_pos * cell * math.sin(math.radians(angle)) / TICK_GAP_PX / 2.5
    assert len(fig.layout.xaxis.ticktext) == len(ticks)


@pytest.mark.parametrize("n_pos, changed", [(61, 59), (61, 58), (64, 62)])
def test_a_change_just_before_the_read_position_keeps_its_label(n_pos, changed):
    """On the long decoder text position 59 once ("t"→"e") lost its label because
    it sat within the thinning step of the read position 60. Now both are named (sharing one
    tick when they do not fit apart) and no labels crowd."""
    from viz.patching import TICK_GAP_PX
    clean = [f"t{i}" for i in range(n_pos)]
    corrupted = list(clean)
    corrupted[changed] = "x"
    z = np.linspace(0, 1, 3 * n_pos).reshape(3, n_pos)
    fig = residual_grid(z, position_labels(clean, corrupted), ["a", "b", "c"], "t",
                        marked_pos=n_pos - 1, marked_cols=[changed])
    text = " ".join(fig.layout.xaxis.ticktext)
    assert f"{changed}·t{changed}→x" in text and f"{n_pos - 1}·t{n_pos - 1}" in text
    cell, angle = _narrow(fig, n_pos)
    ticks = list(fig.layout.xaxis.tickvals)
    gaps = [(b - a) * cell * math.sin(math.radians(angle)) for a, b in zip(ticks, ticks[1:])]
    assert min(gaps) >= TICK_GAP_PX
