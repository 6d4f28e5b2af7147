"""viz/effect.py: the token × method strip with each method's agreement beside it."""

from __future__ import annotations

import numpy as np
import pytest

from viz.effect import method_strip, normalise_rows

TOKENS = ["[CLS]", "the", "<b>cat</b>", "[SEP]"]
METHODS = ["Attention", "Occlusion"]


def test_rows_are_scaled_to_their_largest_size_keeping_the_sign():
    z = normalise_rows(np.array([[0.5, 0.25, 0.0, 0.25], [-4.0, 2.0, np.nan, 0.0],
                                 [0.0, 0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(z[0], [1.0, 0.5, 0.0, 0.5])
    np.testing.assert_allclose(z[1], [-1.0, 0.5, np.nan, 0.0])
    np.testing.assert_array_equal(z[2], 0.0)  # nothing to scale: left as it is


def test_the_strip_keeps_real_values_for_the_hover_and_the_correlations_beside_it():
    values = np.array([[0.5, 0.25, 0.0, 0.25], [-4.0, 2.0, np.nan, 0.0]])
    fig = method_strip(TOKENS, values, METHODS, [1.0, np.nan], "Title <i>", "sub")
    heat, bars = fig.data
    assert list(heat.y) == METHODS and heat.customdata[1][0] == "-4" \
        and heat.customdata[1][2] == "—"
    assert "&lt;b&gt;cat" in heat.x[2]  # user text is escaped in ticks and hover
    assert list(bars.text) == ["(itself)", "no value"] and list(bars.x) == [0.0, 0.0]
    assert "&lt;i&gt;" in fig.layout.title.text
    assert heat.zmin == -1 and heat.zmax == 1
    with pytest.raises(ValueError, match="methods, tokens"):
        method_strip(TOKENS, values[:, :3], METHODS, [1.0, 0.5], "t")


def test_long_inputs_leave_token_labels_to_the_hover():
    tokens = [f"t{i}" for i in range(300)]
    fig = method_strip(tokens, np.ones((2, 300)), METHODS, [1.0, 0.3], "t")
    assert fig.layout.xaxis.showticklabels is False
    assert "hover" in fig.layout.xaxis.title.text


def test_negative_agreement_is_drawn_on_a_minus_one_to_one_axis_wide_enough_to_read():
    """ρ runs from −1 to 1: a negative ρ is a bar left of a visible zero line, not a label in
    the gap; the panel takes about a third of the plot area (~90 px at 800 px)."""
    values = np.array([[0.5, 0.25, 0.0, 0.25], [-4.0, 2.0, 1.0, 0.0], [1.0, 0.0, 0.5, 0.2]])
    fig = method_strip(TOKENS, values, METHODS + ["Third"], [1.0, -0.09, 0.7], "t")
    bars = fig.data[1]
    assert list(bars.x)[1] == pytest.approx(-0.09) and bars.cliponaxis is False
    assert tuple(fig.layout.xaxis2.range) == (-1, 1) and fig.layout.xaxis2.zeroline
    assert -1 in fig.layout.xaxis2.tickvals and 0 in fig.layout.xaxis2.tickvals
    left, right = fig.layout.xaxis.domain, fig.layout.xaxis2.domain
    assert (right[1] - right[0]) >= 0.28 * ((left[1] - left[0]) + (right[1] - right[0]))
