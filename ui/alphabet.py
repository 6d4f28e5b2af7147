"""Our own character models know only some characters; every other one reaches them as the
unknown token ("?"). Every page that shows tokens says so in the same one plain line."""

from __future__ import annotations

from types import SimpleNamespace

import streamlit as st

from .text import md_escape

_NAMES = {" ": "space", "\n": "line break", "\t": "tab"}
MAX_LISTED = 8


def unknown_note(selection) -> str | None:
    """One plain line naming the characters of the sidebar's text the model has no token for,
    and what it reads instead; None when it reads every character (or is not a character
    model)."""
    loaded = getattr(selection, "model", None)
    tokenizer = getattr(loaded, "tokenizer", None)
    index, unk = getattr(tokenizer, "index", None), getattr(tokenizer, "unk_id", None)
    if index is None or unk is None:
        return None
    text = " ".join(t for t in (selection.text, selection.pair or "") if t)
    if hasattr(tokenizer, "unknown_words"):  # a word model (tiny-words)
        return _unknown_words_note(tokenizer, text)
    if type(tokenizer).__name__ == "ReversalTokenizer":
        text = text.lower()  # it reads lower case
    missing = list(dict.fromkeys(c for c in text if c not in index))
    if not missing:
        return None
    listed = ", ".join(_NAMES.get(c, f"“{c}”") for c in missing[:MAX_LISTED])
    more = f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
    return (f"“{tokenizer.chars[unk]}” stands for a character this model does not know: it "
            f"reads {listed}{more} in your text all as that same unknown token.")


def _unknown_words_note(tokenizer, text: str) -> str | None:
    missing = tokenizer.unknown_words(text)
    if not missing:
        return None
    listed = ", ".join(f"“{w}”" for w in missing[:MAX_LISTED])
    more = f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
    return (f"“{tokenizer.words[tokenizer.unk_id]}” stands for a word this model does not "
            f"know: it reads {listed}{more} in your text all as that same unknown token.")


def show_unknown_note(selection, where=st) -> None:
    """The line of `unknown_note` as a caption, when there is one."""
    note = unknown_note(selection)
    if note:
        where.caption(md_escape(note))


def read_text(text: str, trace) -> str:
    """The part of `text` a character model read: one token per character, so its first
    len(trace.tokens) characters when the run dropped the rest (a text longer than the
    model's context); all of it otherwise."""
    return text[:len(trace.tokens)] if trace.dropped and trace.dropped[0] else text


def show_unknown_note_read(selection, *texts, where=st) -> None:
    """The line of `unknown_note` for the characters of `texts` (each cut by `read_text`
    to what the model read), so it never names a character past the context that the model
    never saw."""
    note = unknown_note(SimpleNamespace(model=getattr(selection, "model", None),
                                        text="".join(texts), pair=selection.pair))  # no space added
    if note:
        where.caption(md_escape(note))
