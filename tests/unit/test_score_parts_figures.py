"""The score-parts figures (viz/score_parts.py): the grid shows every term with its number,
bands keep their order, the curve marks the pair's own distance, the positional grid keeps a
fixed 0..1 scale, and wrong shapes are refused in words."""

from __future__ import annotations

import numpy as np
import pytest

from viz.score_parts import band_bars, distance_curve, parts_grid, positional_grid


def test_the_grid_shows_every_term():
    values = np.array([[1.25, -0.5], [0.0, 2.0], [-3.0, 0.125]])
    fig = parts_grid(["word", "place", "earlier heads"], ["word", "place"], values, "t")
    heat = fig.data[0]
    assert list(heat.y) == ["word", "place", "earlier heads"] and list(heat.x) == ["word", "place"]
    assert heat.text[2][0] == "-3.00" and heat.zmin == -3.0 and heat.zmax == 3.0
    with pytest.raises(ValueError, match="query parts × key parts"):
        parts_grid(["a"], ["b", "c"], values, "t")


def test_bands_curve_and_grid():
    fig = band_bars([6.28, 62.8, 6283.0], [1.0, -2.0, 0.5], "t")
    assert list(fig.data[0].x) == ["6.3", "63", "6,283"]
    curve = distance_curve([0, 1, 3, 10], [0.5, 1.0, 2.0, -1.0], 3, "t")
    assert list(curve.data[1].x) == [3] and list(curve.data[1].y) == [2.0]
    with pytest.raises(ValueError, match="one score per distance"):
        distance_curve([0, 1], [1.0], 0, "t")
    grid = positional_grid(np.full((2, 3), 0.02), "t")
    assert (grid.data[0].zmin, grid.data[0].zmax) == (0.0, 1.0)
