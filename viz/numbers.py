"""Numbers a newcomer can read: no scientific notation ("3.2e-07") on screen. Pure formatting,
used by the figures and by the pages' captions and metrics."""

from __future__ import annotations

import math

TINY = 1e-6  # below this, a difference between two sums is float rounding, nothing more


def plain(x: float, digits: int = 2) -> str:
    """A number in plain decimals with about `digits` significant digits: 0.00073, 12.3, -0.5.
    Never "7.3e-04". Values below TINY in size are written "0"."""
    x = float(x)
    if not math.isfinite(x):
        return "—"
    if abs(x) < TINY:
        return "0"
    places = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:.{min(places, 8)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def signed(x: float, digits: int = 2) -> str:
    """plain(x) with its sign always written: +0.014, -0.8."""
    text = plain(x, digits)
    return text if text.startswith("-") or text == "0" else "+" + text


def gap(x: float, floor: float = TINY, note: str = " (rounding only)") -> str:
    """The size of a difference that should be zero (a sum against a total). Below `floor` it
    is written "< 0.000001" plus `note` (by default: it is float rounding, nothing more)."""
    x = abs(float(x))
    if not math.isfinite(x):
        return "—"
    if x < floor:
        return f"< {plain(floor, 1)}{note}"
    return plain(x)


def percent(p: float) -> str:
    """A probability as a percentage: 42%, 3.1%, 0.07%, "< 0.01%" below that, "0%" for 0."""
    p = float(p)
    if not math.isfinite(p):
        return "—"
    if p <= 0:
        return "0%"
    share = 100 * p
    if share < 0.01:
        return "< 0.01%"
    if share >= 10:
        return f"{share:.0f}%"
    return plain(share, 2 if share >= 0.1 else 1) + "%"
