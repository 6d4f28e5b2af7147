"""The patching page's messages about its prompts: the clean prompt of a text too long to patch
(its first whole words, said once, with a button to keep them), prompts of unequal lengths, and
the line naming the top head."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from .patching_inputs import first_words, token_count, use_text
from .text import md_escape


def top_head_line(heads: np.ndarray, top: tuple[int, int]) -> str:
    """The head with the largest positive value, named with its sign (not "brightest": on the
    two-sided colour scale a negative cell can be darker)."""
    value = heads[top]
    if value <= 0:
        return (f"No head brings the clean answer back on its own: every value is 0 or below "
                f"(the largest is {value:.0%}, layer {top[0]}, head {top[1]}).")
    blue = " Blue cells are negative: putting that head back pushes the answer further " \
        "away." if float(np.min(heads)) < 0 else ""
    return (f"The head with the largest positive value (red): layer {top[0]}, head {top[1]} "
            f"({value:.0%} of the clean answer back on its own).{blue}")


def mismatch(loaded, clean: str, corrupted: str, n_clean: int, n_corrupt: int) -> None:
    st.warning(f"The clean prompt is **{n_clean}** tokens long and the corrupted prompt "
               f"**{n_corrupt}**. Patching needs the same number of tokens, so that each "
               "position has a partner. Swap a word for one that is as many tokens long, or "
               "add or remove words; the tokens of both are below.")
    a, b = (loaded.tokenizer.tokens(loaded.encode(t).input_ids[0].tolist()) for t in
            (clean, corrupted))
    n = max(len(a), len(b))
    table = pd.DataFrame({"position": list(range(n)), "clean": a + [""] * (n - len(a)),
                          "corrupted": b + [""] * (n - len(b))})
    table["same"] = ["✓" if x == y else "✗" for x, y in zip(table["clean"], table["corrupted"])]
    st.dataframe(table, hide_index=True, key="pt_tokens", width="content")
    st.caption(f"All {n} positions" + ("; scroll the table to see them all." if n > 10 else "."))


def clean_prompt(selection, loaded, limit: int) -> str | None:
    """The clean prompt: the sidebar text, or, when it is longer than `limit` tokens, its first
    whole words that fit, said in one message with a button to keep them (None: nothing fits)."""
    text = selection.text
    n_text = token_count(loaded, text)
    if n_text <= limit:
        return text
    shorter = first_words(loaded, text, limit)
    if not shorter:
        st.warning(f"The text is {n_text:,} tokens long and patching takes at most {limit}, "
                   "but even its first word is longer than that. Type a shorter text.")
        return None
    n = token_count(loaded, shorter)
    why = "" if n == limit else f" (not {limit}: the next word would not fit whole)"
    n_ctx = loaded.cfg.n_ctx
    if n_text <= n_ctx:
        bound = f"patching takes at most {limit}"
    elif limit == n_ctx:
        bound = f"the model, and so patching, reads at most {limit} at once (the rest is cut)"
    else:
        bound = (f"the model reads at most {n_ctx} at once (the rest is cut), and patching "
                 f"takes at most {limit}")
    st.warning(f"The text is {n_text:,} tokens long; {bound}. So this "
               f"page patches its first **{n}** tokens, the whole words that fit{why}, up to "
               f"“…{md_escape(' '.join(shorter.split()[-4:]))}”.")
    st.button(f"Put these first {n} tokens in the sidebar", key="pt_shorten",
              on_click=use_text(shorter),
              help="Every page then reads the same beginning of your text.")
    return shorter
