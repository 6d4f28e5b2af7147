"""Token strings -> axis labels that are unique, readable and safe to show in plotly.

Plotly renders a small HTML subset in tick labels, hover text and annotations (`<b>`, `<br>`,
`&amp;`...), and treats text between `$...$` as LaTeX when MathJax is present. A label here is
plain text in that dialect: `<`, `>` and `&` are escaped, so a user's "<script>" shows as typed,
and every label starts with its position ("3·cat"), which keeps labels unique on a categorical
axis and keeps a token like "$x$" from being read as LaTeX.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Sequence

MAX_TOKEN_CHARS = 24  # longer tokens are cut with "…" (hover shows the same label)
SEPARATOR = "·"  # U+00B7 between the position and the token

# GPT-2's byte-level alphabet moves unprintable bytes to U+0100 and up; these three are the
# space, newline and tab that learners meet. Only mapped when the tokens look byte-level.
_BYTE_LEVEL = {"Ġ": "␣", "Ċ": "↵", "ĉ": "⇥"}
_WHITESPACE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}
_LABEL = re.compile(r"(\d+)" + SEPARATOR + r"(.*)", re.DOTALL)


def _char(c: str) -> str:
    if c in _WHITESPACE:
        return _WHITESPACE[c]
    category = unicodedata.category(c)
    if category not in _HIDDEN_CATEGORIES:
        return c
    if ord(c) < 0x20:
        return chr(0x2400 + ord(c))  # control pictures: ␀ ␇ ␛ ...
    if ord(c) == 0x7F:
        return "␡"
    return f"⟨U+{ord(c):04X}⟩"  # zero-width, bidi controls, NBSP, soft hyphen, BOM ...


def visible_text(token: str, byte_level: bool = False) -> str:
    """The token with whitespace, control and invisible characters drawn as visible marks.

    Not escaped and not cut: `token_label` does both.
    """
    if byte_level:
        token = "".join(_BYTE_LEVEL.get(c, c) for c in token)
    text = "".join(_char(c) for c in token)
    if not text:
        return "⟨empty⟩"
    if unicodedata.category(text[0]) in ("Mn", "Me"):  # a combining mark with nothing to sit on
        text = "◌" + text
    return text


def token_label(token: str, byte_level: bool = False) -> str:
    """One token as safe plain text for plotly, without the position prefix."""
    text = visible_text(token, byte_level)
    if len(text) > MAX_TOKEN_CHARS:
        text = text[: MAX_TOKEN_CHARS - 1] + "…"
    return html.escape(text, quote=False)


def looks_byte_level(tokens: Sequence[str]) -> bool:
    """True when some token carries GPT-2's byte-level space or newline mark."""
    return any("Ġ" in t or "Ċ" in t for t in tokens)


def is_label(text: str) -> bool:
    """True for a string `axis_labels` could have produced: "position·body", body already safe."""
    match = _LABEL.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return False
    body = html.unescape(match.group(2))
    return (html.escape(body, quote=False) == match.group(2)
            and visible_text(body) == body and len(body) <= MAX_TOKEN_CHARS)


def axis_labels(tokens: Sequence[str]) -> list[str]:
    """Unique, readable, HTML-safe labels for a categorical axis: "0·[CLS]", "1·␣cat", ...

    - the position comes first, so repeated tokens stay distinct;
    - GPT-2's byte-level "Ġ"/"Ċ" become "␣"/"↵" (when the list looks byte-level), real spaces,
      newlines and tabs "␣", "↵", "⇥"; control characters their control pictures (␀, ␛);
      zero-width, bidi and other invisible characters "⟨U+200B⟩"; an empty token "⟨empty⟩";
    - `<`, `>` and `&` are escaped, so the label shows literally in ticks and hover text;
    - tokens longer than MAX_TOKEN_CHARS are cut with "…".

    Idempotent: a list that already consists of unique labels (for example a subset of an
    earlier result, as after hiding special tokens) is returned unchanged.
    """
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a list of strings")
    tokens = list(tokens)
    if all(is_label(t) for t in tokens) and len(set(tokens)) == len(tokens):
        return tokens
    byte_level = looks_byte_level(tokens)
    return [f"{i}{SEPARATOR}{token_label(t, byte_level)}" for i, t in enumerate(tokens)]


def plain_text(label: str) -> str:
    """A label back as plain text (for CSV and file names): entities unescaped."""
    return html.unescape(label)
