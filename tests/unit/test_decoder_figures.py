"""The decoder lab's figures: the next-token bars, the attention row and the logit waterfall."""

from __future__ import annotations

import numpy as np
import pytest

from viz.attribution import head_attribution_grid, logit_waterfall
from viz.generation import attention_row_figure, next_token_figure, share


def test_next_token_bars_mark_the_chosen_and_the_cut_tokens_and_show_the_cut_mass():
    fig = next_token_figure(["a", "<b>", "c"], [0.5, 0.3, 0.1], [True, True, False], 1,
                            0.07, 0.03, title="t")
    labels = list(fig.data[0].y)
    assert labels == ["1. a", "2. &lt;b&gt;  ◀ chosen", "3. c (cut)"]  # user text escaped
    assert list(fig.data[1].x) == [0.07, 0.03] and "top-k" in fig.data[1].y[0]
    greedy = next_token_figure(["a"], [0.9], [True], 0, None, None, title="t")
    assert len(greedy.data) == 1  # nothing cut: no rows for it
    with pytest.raises(ValueError, match="same length"):
        next_token_figure(["a", "b"], [0.5], [True], None, None, None, title="t")
    with pytest.raises(ValueError, match="chosen"):
        next_token_figure(["a"], [0.5], [True], 3, None, None, title="t")


def test_share_never_shows_a_small_cut_as_nothing():
    assert share(0) == "0%" and share(0.1234) == "12%" and share(3e-4) == "0.03%"
    assert share(3e-5) == "< 0.01%"  # small, and still not shown as nothing
    for p in (7.3e-4, 5.4e-5, 0.608, 1e-9):  # no scientific notation on screen
        assert "e-" not in share(p) and share(p).endswith("%")


def test_attention_row_labels_start_at_the_window_and_colour_prompt_and_new_tokens():
    fig = attention_row_figure(["x", "y", "z"], [0.2, 0.3, 0.5], 10, 12, title="t")
    bar = fig.data[0]
    assert list(bar.x) == ["10·x", "11·y", "12·z"]
    assert bar.marker.color[0] != bar.marker.color[2]  # prompt vs written by the model
    with pytest.raises(ValueError, match="one value per token"):
        attention_row_figure(["x"], [0.5, 0.5], 0, 1, title="t")


def test_the_waterfall_ends_on_the_sum_of_its_parts():
    values = [-0.5, 2.0, 1.0]  # the running sum dips below 0 first
    fig = logit_waterfall(["a", "b", "c"], values, "= the logit", title="t")
    bar = fig.data[0]
    assert list(bar.measure) == ["relative"] * 3 + ["total"]
    assert bar.x[-1] == pytest.approx(sum(values)) and bar.y[-1] == "= the logit"
    low, high = fig.layout.xaxis.range
    assert low < -0.5 and high > 2.5  # room for every bar
    grid = head_attribution_grid(np.array([[0.5, -1.0]]), title="t")
    assert grid.data[0].zmid == 0 and list(grid.data[1].customdata[1]) == [0, 1]


def test_the_waterfall_numbers_never_touch_a_name_nor_cross_the_zero_line():
    """The numbers stand in a column right of the plot (paper x = 1), not beside the bars,
    where "+0.014" was drawn across the zero line and "-0.800" touched its name."""
    values = [-0.8, 0.014, 0.02, 2.477, 3e-7]
    fig = logit_waterfall(["token embedding", "position embedding", "layer 0 attention",
                           "layer 0 MLP", "bias"], values, "= the logit", title="t")
    assert fig.data[0].textposition == "none"
    notes = {a.y: a for a in fig.layout.annotations if a.xref == "paper" and a.x == 1}
    assert list(notes) == list(fig.data[0].y)  # one number per row, the total too
    assert notes["token embedding"].text == "-0.800" and notes["position embedding"].text \
        == "+0.014" and notes["= the logit"].text == f"{sum(values):.3f}"
    assert notes["token embedding"].xanchor == "left" and fig.layout.margin.r >= 50
    assert "e-" not in notes["bias"].text  # a tiny part, in plain decimals
