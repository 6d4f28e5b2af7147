"""The patching page's messages about its prompts: the clean prompt of a text too long to patch
(its first whole words, said once, with a button to keep them), prompts of unequal lengths, and
the lines naming the metric and the top head, the warning for a gap too small to divide by, and
what to look for in the induction preset's grids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from analysis.patching import SMALL_GAP
from viz.labels import visible_text

from ui.patching_inputs import first_words, token_count, use_text
from ui.text import md_escape


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


def metric_line(r: dict, tokenizer) -> str:
    if r["kind"] == "cosine":
        return ("Metric: the mean cosine between each final token vector and the clean run's "
                f"(clean {r['clean_value']:.3f}, corrupted {r['corrupted_value']:.3f}). This "
                "model is an encoder with no next-token scores, so the metric asks how close "
                "the output vectors come back to the clean ones.")
    a, w = (md_escape(visible_text(t)) for t in tokenizer.tokens([r["answer"], r["wrong"]]))
    prefer = (f" The clean prompt prefers “{a}” next, the corrupted one “{w}”: a value of 1 "
              "means the clean preference is fully back." if r["clean_value"] > 0 >
              r["corrupted_value"] else "")
    return (f"Metric: logit(“{a}”) − logit(“{w}”) at position {r['position']}, the last "
            f"token: {r['clean_value']:.3f} on the clean prompt, {r['corrupted_value']:.3f} "
            f"on the corrupted one.{prefer}")


def small_gap(r: dict) -> bool:
    """Warn (and return True) when clean and corrupted logit differences nearly agree."""
    gap = abs(r["clean_value"] - r["corrupted_value"])
    small = r["kind"] == "logit_diff" and gap < SMALL_GAP
    if small:
        st.warning(f"The corrupted prompt barely changes the answer: the logit difference is "
                   f"{r['clean_value']:.3f} against {r['corrupted_value']:.3f}, a gap of only "
                   f"{gap:.3f}. Dividing by so small a gap makes the grids noisy, with values "
                   "far beyond 0 and 1. Change a word nearer the end, or pick two other "
                   "tokens.")
    return small


def name_heads(r: dict, which: str, n_seqs: int) -> None:
    """What the learner should see, with every head and number read from the run."""
    grid, prev, ind = r["heads"], r["previous"], r["induction"]
    last = grid.shape[0] - 1
    l0, l1 = int(grid[0].argmax()), int(grid[last].argmax())
    p_layer, p_head = np.unravel_index(int(prev.argmax()), prev.shape)
    i_layer, i_head = np.unravel_index(int(ind.argmax()), ind.shape)
    lines = []
    if which == "first":
        same = (p_layer, p_head) == (0, l0)
        lines.append(
            f"- **Layer 0, head {l0}** has the largest positive value of layer 0 "
            f"({grid[0, l0]:.0%} of "
            "the clean answer comes back when only it is put back). " + (
                f"It is the **previous-token head**: of all heads, it sends the most attention "
                f"to the token just before ({prev[0, l0]:.0%} on average)." if same else
                f"The head that looks most at the previous token is layer {p_layer}, head "
                f"{p_head} ({prev[p_layer, p_head]:.0%}): here the work is shared."))
    else:
        lines.append(f"- Layer 0 stays pale (at most {grid[0].max():.0%}): the first copy is "
                     "clean in both prompts, so the previous-token head already did its work.")
    same = (i_layer, i_head) == (last, l1)
    lines.append(
        f"- **Layer {last}, head {l1}** has the largest positive value of layer {last} "
        f"({grid[last, l1]:.0%}). " + (
            f"It is the **induction head**: its induction score is the highest of all heads "
            f"({ind[last, l1]:.0%} of its attention goes from each token of the second copy to "
            "the token that followed it in the first copy)." if same else
            f"The induction score ranks layer {i_layer}, head {i_head} first "
            f"({ind[i_layer, i_head]:.0%}): in these sequences the heads share the work."))
    st.markdown("**What to look for.** The head grid is averaged over "
                f"{n_seqs} random sequence{'s' * (n_seqs > 1)}.\n" + "\n".join(lines))
