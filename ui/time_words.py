"""How a time the app expects is said on screen: "about N s" only when N is within 2x of
everything the estimate allows, otherwise the range (analysis/pace.py makes the span). Imports
nothing heavy: the run queue's line (ui/busy.py) shows before torch loads."""

from __future__ import annotations

from analysis.pace import Span


def clock(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"


def span_words(span: Span) -> str:
    """ "about 20 s", or "between 5 s and 2 min" when the span is too wide for one number
    within 2× of it."""
    if span.high < 1.5:
        return "about a second"
    if span.narrow:
        return f"about {clock(span.middle)}"
    low = max(1.0, span.low)
    if clock(low) == clock(span.high):
        return f"about {clock(low)}"
    if low < 90 <= span.high:
        return f"between {clock(low)} and {clock(span.high)}"
    return f"between {clock(low).split()[0]} and {clock(span.high)}"
