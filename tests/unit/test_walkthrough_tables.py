"""The walkthrough's preview tables keep only the columns that fit (analysis/walkthrough/
table.py), and its activation step draws where the function bends, saying what it leaves out
(analysis/walkthrough/mlp.py, viz/walkthrough.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.walkthrough.mlp import activation_view
from analysis.walkthrough.table import (
    FULL_PX, MIN_COLUMN_PX, PAIR_PX, cell_texts, column_px, decimals_for, display_values,
    fitting_columns,
    table_px,
)
from viz.walkthrough import activation_scatter, top_tokens_bar


def test_cell_texts_round_to_three_decimals_and_spell_minus_infinity():
    values = np.array([[-0.23571, 0.2, -0.0004, -np.inf, 13.0]])
    assert list(cell_texts(values)[0]) == ["-0.236", "0.200", "0.000", "−∞", "13.000"]
    assert list(cell_texts(np.array([[101, 13523]]))[0]) == ["101", "13523"]
    assert display_values(values).dtype == object  # −∞ present: text
    rounded = display_values(np.array([[0.123456, -2.0]]))
    assert rounded.dtype.kind == "f" and rounded[0, 0] == pytest.approx(0.123)


def test_every_number_of_a_table_has_the_same_decimals():
    """Once "2.37" and "-0.92" stood beside "4.319", and "0" for a tiny value: a column
    did not read as a column. Now every number has exactly 3 decimals, and none is "-0.000"."""
    values = np.array([[4.3191, 2.37, -0.92], [0.0, -0.00001, 1.0]])
    texts = cell_texts(values)
    assert [list(row) for row in texts] == [["4.319", "2.370", "-0.920"],
                                            ["0.000", "0.000", "1.000"]]
    assert {len(t.split(".")[1]) for t in texts.ravel()} == {3}
    shown = display_values(values)
    assert not np.signbit(shown[1, 1])  # rounded to 0.0, not -0.0 (which would read "-0.000")
    # a table of whole numbers (the mask: 0 where a token may look, −∞ where not) says "0"
    mask = np.array([[0.0, -np.inf], [0.0, 0.0]])
    assert decimals_for(mask) == 0 and decimals_for(values) == 3
    assert [list(row) for row in cell_texts(mask)] == [["0", "−∞"], ["0", "0"]]


def test_longer_texts_make_wider_columns_with_a_floor():
    assert column_px(["1"]) == MIN_COLUMN_PX
    assert column_px(["7·because", "13523"]) > column_px(["1·the", "13523"])
    assert column_px(["-0.236"]) < column_px(["-0.2357"])  # fewer characters, narrower


@pytest.mark.parametrize("budget", [PAIR_PX, FULL_PX, 673.0])
def test_fitting_columns_is_the_most_that_fit(budget):
    rng = np.random.default_rng(0)
    cells = cell_texts(rng.normal(size=(6, 8)) * 3)
    index = [f"{i}·[CLS]" for i in range(6)]
    headers = [str(j) for j in range(8)]
    n = fitting_columns(index, headers, cells, budget)
    assert 1 <= n <= 8
    assert table_px(index, headers[:n], cells[:, :n]) <= budget
    if n < 8:  # one more would not fit
        assert table_px(index, headers[:n + 1], cells[:, :n + 1]) > budget
    # a pair of tables (narrower) never gets more columns than a table across the page
    assert fitting_columns(index, headers, cells, PAIR_PX) <= \
        fitting_columns(index, headers, cells, FULL_PX)


def test_the_ids_gelu_and_pooled_tables_fit():
    """At 800 px the ids table once cut "7·becaus"; the GELU tables lost their third
    column side by side; the pooled vector showed 5 of 8 columns even at 1400."""
    ids = np.array([[101, 1996, 4937, 2938, 2006, 1996, 13523, 2138]])
    words = ["0·[CLS]", "1·the", "2·cat", "3·sat", "4·on", "5·the", "6·mat", "7·because"]
    n = fitting_columns(["text 1"], words, cell_texts(ids), FULL_PX)
    assert 5 <= n < 8
    gelu = cell_texts(np.array([[-5.2304, -0.3275, 0.2357, 1.0203, -2.1231, -0.948, 0.5, 1.1]]
                               * 6))
    index = ["0·[CLS]", "1·the", "2·cat", "3·sat", "4·on", "5·the"]
    n_pair = fitting_columns(index, [str(j) for j in range(8)], gelu, PAIR_PX)
    assert 3 <= n_pair < 8
    # a long header (a logit column named by its token) takes the room of several numbers
    wide = fitting_columns(["0·The"], ["<|endoftext|> (id 0)"] * 8, cell_texts(np.ones((1, 8))),
                           FULL_PX)
    assert wide < n_pair


def test_a_column_wider_than_the_page_still_shows_one():
    assert fitting_columns(["x"], ["a" * 200], np.array([["1"]], dtype=object), PAIR_PX) == 1


def test_activation_view_keeps_the_window_and_counts_what_it_leaves_out():
    before = torch.tensor([[-13.2, -5.0, -1.0, 0.0, 0.5], [3.9, 4.1, 24.9, -4.0, 2.0]])
    after = torch.nn.functional.gelu(before)
    view = activation_view(before, after, "gelu")
    assert view.total == 10 and view.below == 2 and view.above == 2
    assert view.lowest == pytest.approx(-13.2) and view.highest == pytest.approx(24.9)
    assert len(view.x) == 6 and np.abs(view.x).max() <= 4.0
    np.testing.assert_allclose(view.y, torch.nn.functional.gelu(torch.tensor(view.x)).numpy(),
                               atol=1e-6)
    assert view.curve_x[0] == -4.0 and view.curve_x[-1] == 4.0
    np.testing.assert_allclose(view.curve_y, torch.nn.functional.gelu(
        torch.tensor(view.curve_x)).numpy(), atol=1e-6)
    relu = activation_view(before, before.clamp(min=0), "relu")
    assert relu.curve_y.min() == 0.0
    with pytest.raises(ValueError):
        activation_view(before, after[:1], "gelu")


def test_activation_scatter_shows_the_bend_not_the_outlier():
    """One outlier at 25 used to set the axes to 0..25, squashing the curve near 0."""
    before = torch.cat([torch.linspace(-3, 3, 500), torch.tensor([25.0, -14.0])])
    view = activation_view(before, torch.nn.functional.gelu(before), "gelu")
    fig = activation_scatter(view.x, view.y, "Activation: GELU",
                             (view.curve_x, view.curve_y), view.window, "GELU")
    dots, line = fig.data  # the line drawn over the dots
    assert line.mode == "lines" and line.name == "GELU" and dots.mode == "markers"
    assert max(abs(v) for v in dots.x) <= 4.0
    assert tuple(fig.layout.xaxis.range) == pytest.approx((-4.08, 4.08))
    assert fig.layout.yaxis.range[1] == pytest.approx(4.08) and fig.layout.yaxis.range[0] < -0.17
    assert "between −4 and 4" in fig.layout.title.subtitle.text
    many = np.linspace(-3, 3, 9000)
    assert "every 2nd of 9,000" in activation_scatter(many, many, "x").layout.title.subtitle.text
    plain = activation_scatter([0.0, 1.0], [0.0, 1.0], "x")  # no window: as before
    assert len(plain.data) == 1 and plain.layout.xaxis.range is None


def test_next_token_bars_rank_from_one_and_write_percentages_like_generate():
    """The bars once started at "rank 0" and showed "0.0%" for a tiny probability;
    Generate starts at "1." and writes "< 0.01%"."""
    from viz.numbers import percent

    probs = [0.611, 0.387, 0.001, 0.00003]
    fig = top_tokens_bar(["\n", " ", "w", "s"], probs, "Most likely next tokens")
    bars = fig.data[0]
    assert list(bars.y) == ["1. ↵", "2. ␣", "3. w", "4. s"]
    assert list(bars.text) == [percent(p) for p in probs] == ["61%", "39%", "0.1%", "< 0.01%"]
    assert fig.layout.xaxis.tickformat == ".0%"
    assert "rank 0" not in str(fig.layout.title)
