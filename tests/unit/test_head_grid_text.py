"""The in-cell labels of the layers × heads grid: short enough for a narrow screen (#25)."""

from __future__ import annotations

import numpy as np

from viz.heads import cell_text, head_grid


def test_cell_text_keeps_two_significant_digits_of_the_largest_value():
    assert cell_text(np.array([[3.30, 0.67, np.nan]])) == [["3.3", "0.7", ""]]
    assert cell_text(np.array([[0.0021, -0.0004, 0.0123]])) == [["0.002", "0.000", "0.012"]]
    assert cell_text(np.array([[31.2, 4.6]])) == [["31", "5"]]
    assert cell_text(np.array([[0.0, 0.0]])) == [["0.00", "0.00"]]


def test_the_grid_sizes_its_cell_text_to_the_cell_and_hovers_the_full_value():
    values = np.array([[3.3012, 1.1612], [0.004, 2.5]])
    heat, scatter = head_grid(values, "t", "v", fmt=".3f").data
    assert heat.texttemplate == "%{text}"
    # a small grid: each cell its own two significant digits (0.004 does not read "0.0")
    assert [list(r) for r in heat.text] == [["3.3", "1.2"], ["0.004", "2.5"]]
    assert heat.textfont.size is None  # plotly fits "auto" text inside the narrowest cell
    assert list(scatter.text) == ["3.301", "1.161", "0.004", "2.500"]  # hover: full value
    big = head_grid(np.ones((24, 24)), "t", "v").data[0]
    assert big.text is None and big.texttemplate is None  # too many cells: colour only


def test_no_cell_text_when_it_would_not_fit_a_narrow_screen():
    rng = np.random.default_rng(0)
    entropy = rng.uniform(0.5, 3.4, (6, 12))  # "3.3": three characters fit 12 narrow cells
    assert head_grid(entropy, "t", "v").data[0].texttemplate == "%{text}"
    small = rng.uniform(-0.002, 0.06, (6, 12))  # "-0.001": six characters do not
    heat, scatter = head_grid(small, "t", "v", fmt=".3f", diverging=True).data
    assert heat.texttemplate is None and heat.text is None
    assert len(scatter.text) == 72 and all(t for t in scatter.text)  # the hover keeps them
    few = head_grid(small[:2, :4], "t", "v").data[0]  # 4 heads: wide cells, numbers shown
    assert few.texttemplate == "%{text}"


def test_a_small_grid_gives_each_cell_its_own_two_digits_when_they_fit():
    """An ablation grid once showed "0.0" for 0.0330 beside 1.2."""
    heat = head_grid(np.array([[0.0330, 1.2177, -0.0204, 0.5]]), "t", "v", diverging=True).data[0]
    assert [list(r) for r in heat.text] == [["0.033", "1.2", "-0.020", "0.50"]]
    assert cell_text(np.array([[0.0330, 1.2]])) == [["0.0", "1.2"]]  # the column rule
    assert cell_text(np.array([[0.0330, 1.2]]), max_chars=3) == [["0.0", "1.2"]]  # too long
    assert cell_text(np.array([[0.0, -0.0004]]), max_chars=9) == [["0", "0.000"]]  # no "-0.000"
    wide = head_grid(np.tile(np.linspace(0.033, 3.3, 12), (6, 1)), "t", "v").data[0]
    assert wide.text[0][0] == "0.0"  # 12 narrow columns: the shared column rule stays
