"""Filling a lesson's text with facts, and making teacher-written Markdown safe to show."""

from __future__ import annotations

import numbers
import re

from .facts import FactError
from .format import PLACEHOLDER
from .limits import FORMAT_SPEC, FORMATS_SAID, MAX_STEP_CHARS

# A link or image whose target is not a web address or a path in this app is made inert.
_LINK = re.compile(r"(!?\[[^\]]*\])\(\s*<?([^)\s>]*)>?(\s+\"[^\"]*\")?\s*\)")
_SAFE_TARGET = re.compile(r"(https?://|/(?!/)|#|[a-z0-9-]+(\?|$))", re.IGNORECASE)


def placeholders(text: str) -> set[str]:
    """The fact names a text uses."""
    return {name for name, _, _ in PLACEHOLDER.findall(text)}


def _format(value, spec: str) -> str:
    if not spec:
        if isinstance(value, float):
            return f"{value:.2f}"
        return f"{value:,}" if isinstance(value, int) else str(value)
    if not FORMAT_SPEC.fullmatch(spec):  # the parser refuses these; never a width or a fill
        raise FactError(f"a fact cannot be written as {spec!r}: use {FORMATS_SAID}")
    try:
        return format(value, spec)
    except (TypeError, ValueError) as exc:
        raise FactError(f"cannot write {value!r} as {spec!r}: {exc}") from None


def fill(text: str, facts: dict[str, dict], limit: int = MAX_STEP_CHARS) -> str:
    """Replace every {fact.field[:spec]} with its value from `facts` (name -> fields). The
    result is at most `limit` characters (FactError past it, before more is built)."""
    return _fill(text, facts, limit, limit)


def _fill(text: str, facts: dict[str, dict], room: int, limit: int) -> str:
    """`fill` with `room` characters left of the step's `limit`."""
    left = [room - len(text)]
    too_long = FactError(f"with its facts filled in, this step's words would be longer than "
                         f"{limit:,} characters")

    def one(match: re.Match) -> str:
        name, attr, spec = match.group(1), match.group(2), match.group(3) or ""
        if name not in facts or attr not in facts[name]:
            raise FactError(f"{{{name}.{attr}}} was not computed for this step")
        value = _format(facts[name][attr], spec)
        left[0] -= len(value) - len(match.group(0))
        if left[0] < 0:
            raise too_long
        return value
    if left[0] < 0:
        raise too_long
    return PLACEHOLDER.sub(one, text)


def fill_all(parts: dict[str, str], facts: dict[str, dict],
             limit: int = MAX_STEP_CHARS) -> dict[str, str]:
    """Every text of a step filled in; together they are at most `limit` characters."""
    out, room = {}, limit
    for key, text in parts.items():
        out[key] = _fill(text, facts, room, limit)
        room -= len(out[key])
    return out


def resolve_setting(value, facts: dict[str, dict]):
    """A page setting: a whole-number fact becomes an int, anything else stays as it is."""
    if isinstance(value, str) and PLACEHOLDER.fullmatch(value):
        match = PLACEHOLDER.fullmatch(value)
        got = facts[match.group(1)][match.group(2)]
        return int(got) if isinstance(got, numbers.Integral) else got
    return value


def safe_markdown(text: str) -> str:
    """Teacher Markdown, inert: raw HTML shows as text (never as markup), and a link whose
    target is not http(s) or a page of this app (javascript:, data:, file:, //host) keeps its
    words but loses the link."""
    text = text.replace("<", "&lt;")

    def link(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        if _SAFE_TARGET.match(target) and ":" not in target.split("?")[0].replace(
                "https://", "").replace("http://", ""):
            return match.group(0)
        return label[1:] if label.startswith("!") else label
    return _LINK.sub(link, text)
