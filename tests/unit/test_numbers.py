"""Numbers on screen in plain decimals and percentages, never scientific notation."""

from __future__ import annotations

import math

from viz.numbers import gap, percent, plain, signed


def test_plain_numbers_never_use_scientific_notation():
    for x in (3.2e-7, 7.3e-4, 5.4e-5, -3.9e-6, 0.014, 12.345, 1e6):
        assert "e" not in plain(x) and "e" not in signed(x)
    assert plain(7.3e-4) == "0.00073" and plain(-0.8) == "-0.8" and plain(3.2e-7) == "0"
    assert signed(0.014) == "+0.014" and signed(-0.8) == "-0.8" and plain(math.nan) == "—"


def test_a_rounding_gap_is_called_what_it_is():
    assert gap(3.2e-7) == "< 0.000001 (rounding only)" and gap(-3.2e-7) == gap(3.2e-7)
    assert gap(3.9e-6, floor=1e-4, note="") == "< 0.0001" and gap(0.0123) == "0.012"


def test_probabilities_are_percentages():
    assert [percent(p) for p in (0.608, 0.031, 7.3e-4, 5.4e-5, 0, 1)] == \
        ["61%", "3.1%", "0.07%", "< 0.01%", "0%", "100%"]
