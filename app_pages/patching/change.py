"""The patching page shows what the corrupted prompt changed: both prompts, cut to the words
around each change, with the changed words highlighted. Text is escaped for Markdown, so
nothing the user typed becomes markup."""

from __future__ import annotations

import difflib
import re

from ui.text import md_escape

AROUND = 6  # words kept either side of a change
MAX_CHANGES = 3  # changes shown; more are counted
WHOLE_PIECES = 60  # a prompt of at most this many words and spaces is shown whole
_WORDS = re.compile(r"\s+|[^\s]+")


def _pieces(text: str) -> list[str]:
    return _WORDS.findall(text)


def changed_spans(clean: str, corrupted: str) -> list[tuple[int, int, int, int]]:
    """(clean_first, clean_end, corrupted_first, corrupted_end) word-piece ranges where the
    two texts differ (spaces are pieces too), in order."""
    a, b = _pieces(clean), _pieces(corrupted)
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


def _marked(pieces: list[str], spans: list[tuple[int, int]]) -> str:
    """The pieces near the spans, the spans highlighted, "…" where text is left out."""
    keep = set(range(len(pieces))) if len(pieces) <= WHOLE_PIECES else set()
    for first, end in spans:
        keep |= set(range(max(0, first - 2 * AROUND), min(len(pieces), end + 2 * AROUND)))
    out, last = [], -1
    inside = {i for first, end in spans for i in range(first, end)}
    for i in sorted(keep):
        if i != last + 1:
            out.append("… ")
        piece = pieces[i]
        if i in inside and piece.strip():
            out.append(f":orange-background[**{md_escape(piece)}**]")
        else:
            out.append(" " if not piece.strip() else md_escape(piece))
        last = i
    if last < len(pieces) - 1:
        out.append(" …")
    return "".join(out).strip()


def change_lines(clean: str, corrupted: str) -> str:
    """Markdown: the clean and the corrupted prompt around each change, the changed words
    highlighted; "" when the texts are equal."""
    spans = changed_spans(clean, corrupted)
    if not spans:
        return ""
    shown = spans[:MAX_CHANGES]
    more = (f"  \n:small[and {len(spans) - MAX_CHANGES} more "
            f"change{'s' * (len(spans) - MAX_CHANGES > 1)}]" if len(spans) > MAX_CHANGES else "")
    a = _marked(_pieces(clean), [(s[0], s[1]) for s in shown])
    b = _marked(_pieces(corrupted), [(s[2], s[3]) for s in shown])
    return f"**Clean:** {a}  \n**Corrupted:** {b}{more}"
