"""The patching page's inputs: a default corrupted prompt of the same token length (for a
decoder, one that clearly moves its answer), token counts, the candidate tokens of the logit
difference, and the click (on a grid or beside it) that opens a head.

Callbacks are bound (functools.partial) to names and small values only, like ui/callbacks.py.
"""

from __future__ import annotations

import re
from functools import partial

import streamlit as st
import torch

from analysis.patching import pick_corruption, pick_flip
from viz.heads import picked_head

from . import view_state
from .callbacks import _clicked_points, open_on_attention

# Word swaps that keep a sentence sensible; tried first, then the fallbacks below.
SWAPS = {"cat": "dog", "dog": "cat", "warm": "cold", "cold": "warm", "mat": "rug",
         "man": "woman", "woman": "man", "he": "she", "she": "he", "his": "her", "her": "his",
         "big": "small", "small": "big", "red": "blue", "blue": "red", "day": "night",
         "night": "day", "paris": "rome", "france": "italy", "sentence": "paragraph",
         "one": "two", "two": "one", "yes": "no", "good": "bad", "bad": "good"}
FALLBACKS = ("dog", "cat", "cold", "red", "tree", "car", "x", "a")
PUNCTUATION = ".,?!;:"  # a closing mark swapped for another (a character model reads it)
LETTERS = "aeost"  # last resort: the last letter of the last word swapped for one of these
MAX_TRIES = 24  # tokenizations tried before giving up on a default (decoders: kept swaps)
MAX_CHECKS = 64  # a decoder's swaps tokenized before giving up
MAX_FLIPS = 96  # swaps before the last token tried for one that flips the answer
WORD = re.compile(r"[^\W\d_]+")


def token_count(loaded, text: str) -> int:
    """Tokens of the text as every page tokenizes it, before any cut to the context."""
    enc = loaded.encode(text)
    return int(enc.attention_mask[0].sum()) + int(enc.n_dropped[0])


def first_words(loaded, text: str, limit: int) -> str:
    """The longest run of the text's first whole words that is at most `limit` tokens, as every
    page counts them ("" when even the first word is longer)."""
    words = text.split()
    low, high = 0, len(words)  # invariant: the first `low` words fit
    while low < high:
        mid = (low + high + 1) // 2
        if token_count(loaded, " ".join(words[:mid])) <= limit:
            low = mid
        else:
            high = mid - 1
    return " ".join(words[:low])


def _set_text(text: str) -> None:
    view_state.set_texts(text, keep_example=True)


def use_text(text: str):
    """An on_click callback: put `text` in the sidebar's text box."""
    return partial(_set_text, text)


def follow_default(key: str, memory_key: str, made: str) -> None:
    """Let the text box `key` follow its made default (`made`, e.g. the sidebar text with a word
    swapped) until the user types in it: the last default is kept under `memory_key`."""
    if st.session_state.get(key, st.session_state.get(memory_key)) == \
            st.session_state.get(memory_key):
        st.session_state[key] = made
    st.session_state[memory_key] = made


def _swap(word: str) -> list[str]:
    target = SWAPS.get(word.lower())
    options = ([target] if target else []) + [w for w in FALLBACKS if w != word.lower()]
    if word[:1].isupper():
        options = [w.capitalize() for w in options]
    return options


def default_corruption(loaded, text: str, limit: int, last_first: bool = False) -> str:
    """The text with one word swapped for another of the same length in tokens (a word in
    SWAPS first, else the last word; with last_first, the words from the last one back, which
    suits a decoder, whose metric is read at the last token), or "" when the text is longer
    than `limit` tokens or no swap keeps its length."""
    n = token_count(loaded, text)
    if not text.strip() or n > limit:
        return ""
    words = list(WORD.finditer(text))
    known = [m for m in words if m.group().lower() in SWAPS]
    order = words[::-1] if last_first else known[:1] + words[::-1]
    tries = 0
    for match in order:
        for other in _swap(match.group()):
            candidate = text[:match.start()] + other + text[match.end():]
            tries += 1
            if candidate != text and token_count(loaded, candidate) == n:
                return candidate
            if tries >= MAX_TRIES:
                return ""
    return ""


def decoder_corruptions(loaded, text: str, limit: int, n_words: int = 3) -> list[str]:
    """Corrupted prompts worth trying for a decoder (whose metric is read at the last token),
    each as many tokens as the text, most sensible first: a word of SWAPS among the last
    `n_words` words swapped, then the closing punctuation mark swapped for another, then the
    fallback words in the last words, then the last word's last letter. [] when the text
    is longer than `limit` tokens."""
    n = token_count(loaded, text)
    if not text.strip() or n > limit:
        return []
    words = list(WORD.finditer(text))[::-1][:n_words]

    def swapped(m, other: str) -> str:
        return text[:m.start()] + other + text[m.end():]

    end = text.rstrip()
    tries = [swapped(m, _swap(m.group())[0]) for m in words if m.group().lower() in SWAPS]
    tries += [end[:-1] + p + text[len(end):] for p in PUNCTUATION
              if end[-1] in PUNCTUATION and p != end[-1]]
    tries += [swapped(m, o) for m in words for o in _swap(m.group()) if o.lower() in FALLBACKS]
    if words:  # the last word's last letter (a character model keeps its length)
        last = words[0]
        tries += [text[:last.end() - 1] + c + text[last.end():] for c in LETTERS]
    kept = []
    for c in [c for c in dict.fromkeys(tries) if c != text][:MAX_CHECKS]:
        if token_count(loaded, c) == n:
            kept.append(c)
        if len(kept) >= MAX_TRIES:
            break
    return kept


def flip_corruptions(loaded, text: str, limit: int) -> list[str]:
    """Changes before the last token (whose next token the metric reads), each as many tokens as
    the text and ending in the same token: a word swapped (SWAPS, then FALLBACKS), from the
    last word back, then one letter of the last words swapped for a letter or a space (a
    character model reads those). [] when the text is longer than `limit` tokens."""
    ids = loaded.encode(text).input_ids[0].tolist()
    if not text.strip() or token_count(loaded, text) > limit or len(ids) < 2:
        return []
    words = list(WORD.finditer(text))[::-1]
    tries = [text[:m.start()] + o + text[m.end():] for m in words for o in _swap(m.group())]
    for m in words[:3]:
        for i in range(m.end() - 1, m.start() - 1, -1):
            tries += [text[:i] + c + text[i + 1:] for c in LETTERS + " " if c != text[i]]
    kept = []
    for c in [c for c in dict.fromkeys(tries) if c != text][:MAX_FLIPS]:
        other = loaded.encode(c).input_ids[0].tolist()
        if len(other) == len(ids) and other[-1] == ids[-1] and token_count(loaded, c) == \
                len(ids):
            kept.append(c)
    return kept


def flip_corruption(loaded, text: str, limit: int) -> str:
    """For a decoder: a change before the last token after which the model's top next token
    differs from the clean text's (`pick_flip`), or "" when no tried change does that."""
    return pick_flip(loaded, text, flip_corruptions(loaded, text, limit))


def best_corruption(loaded, text: str, limit: int) -> str:
    """For a decoder: of `decoder_corruptions`, one that moves the answer clearly (the first
    with a logit gap of at least CLEAR_GAP, else the largest gap), read from the model's
    logits; else `default_corruption` (words further back); "" when no swap keeps the length."""
    tries = decoder_corruptions(loaded, text, limit)
    if not tries:
        return default_corruption(loaded, text, limit, last_first=True)
    return pick_corruption(loaded, text, tries)


def candidates(clean_logits: torch.Tensor, corrupted_logits: torch.Tensor,
               k: int = 8) -> list[int]:
    """Token ids worth offering for the logit difference: the clean run's top k, then the
    corrupted run's top k not already listed. Logits: [vocab]."""
    ids = torch.topk(clean_logits, k).indices.tolist() + \
        torch.topk(corrupted_logits, k).indices.tolist()
    return list(dict.fromkeys(int(i) for i in ids))


def _open(chart_key: str, n_heads: int, text_key: str | None) -> None:
    picked = picked_head(_clicked_points(chart_key), n_heads)
    if picked is None:
        return
    open_on_attention(*picked, text=(st.session_state.get(text_key) or None) if text_key else None)


def open_patched_head(chart_key: str, n_heads: int, text_key: str | None = None):
    """An on_select callback: a click in the head grid opens that head on the attention page,
    with the same model (and, given text_key, that session-state text in the sidebar)."""
    return partial(_open, chart_key, n_heads, text_key)


def _pick(box_key: str, text_key: str | None) -> None:
    layer, head = st.session_state[box_key]
    open_on_attention(layer, head,
                      text=(st.session_state.get(text_key) or None) if text_key else None)


def open_chosen(box_key: str, text_key: str | None = None):
    """An on_click callback opening the (layer, head) in the select box box_key."""
    return partial(_pick, box_key, text_key)


def head_picker(cfg, top, chart_prefix: str, text_key: str | None) -> None:
    heads = [(lay, h) for lay in range(cfg.n_layers) for h in range(cfg.n_heads)]
    box_key, last_top = f"{chart_prefix}_box", f"_{chart_prefix}_top"
    if st.session_state.get(box_key) in (None, st.session_state.get(last_top)) or \
            st.session_state.get(box_key) not in heads:
        st.session_state[box_key] = top  # follows the top head until the user picks
    st.session_state[last_top] = top
    box, button = st.columns([3, 1], vertical_alignment="bottom")
    box.selectbox("Or pick a head", heads, key=box_key,
                  format_func=lambda lh: f"layer {lh[0]}, head {lh[1]}")
    button.button("Open on the attention page", key=f"{chart_prefix}_open",
                  on_click=open_chosen(box_key, text_key))


def _switch(model: str, values: dict) -> None:
    view_state.choose_model(model)
    st.session_state[view_state.PAIR_KEY] = ""
    st.session_state.update(values)


def switch_model(model: str, **values):
    """An on_click callback: choose `model` in the sidebar (one text, no pair) and set these
    session-state values."""
    return partial(_switch, model, values)
