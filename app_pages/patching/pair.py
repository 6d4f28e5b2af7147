"""The patching page's two tokens of the logit difference (a decoder's): the answer, counted
+, and the wrong token, counted −; by default the engine's pair (the clean prompt's prediction
against the corrupted one's), offered among both prompts' top tokens."""

from __future__ import annotations

import streamlit as st

from analysis.patching import default_pair
from viz.labels import visible_text

from ui.patching_inputs import candidates
from ui.view_state import page_view

VIEW = page_view("patching")


def pair_choices(loaded, clean: str, corrupted: str) -> dict[int, str]:
    """The tokens offered for the logit difference, labelled; the session's answer and wrong
    token set to a link's or a lesson's, else the engine's default pair (decoders only)."""
    clean_logits = loaded.run(clean, keep=lambda n: False).logits[0, -1]  # [vocab]
    corrupted_logits = loaded.run(corrupted, keep=lambda n: False).logits[0, -1]  # [vocab]
    pair = default_pair(clean_logits, corrupted_logits)  # the engine's default
    asked = [i for i in (VIEW.given("answer"), VIEW.given("wrong"))  # a link's or a lesson's
             if i is not None and 0 <= i < clean_logits.numel()]
    ids = list(dict.fromkeys(list(pair) + candidates(clean_logits, corrupted_logits) + asked))
    names = loaded.tokenizer.tokens(ids)
    for name, default in (("answer", pair[0]), ("wrong", pair[1])):
        VIEW[name] = VIEW.given(name) if VIEW.given(name) in ids else default
    return {i: f"“{visible_text(t)}”" for i, t in zip(ids, names)}


def metric_pair(loaded, clean: str, corrupted: str) -> tuple[int | None, int | None]:
    """The two tokens of the logit difference, chosen on screen (decoders only)."""
    if not loaded.cfg.has_lm_head:
        return None, None
    shown = pair_choices(loaded, clean, corrupted)
    ids = list(shown)
    cols = st.columns(2)
    answer = cols[0].selectbox("Answer token (counts +)", ids, key=VIEW.key("answer"),
                               format_func=shown.get,
                               help="By default the clean prompt's prediction against the "
                               "corrupted one's; the list holds both prompts' top tokens.")
    wrong = cols[1].selectbox("Wrong token (counts −)", ids, key=VIEW.key("wrong"),
                              format_func=shown.get)
    if answer == wrong:
        st.info("Pick two different tokens for the logit difference.")
        st.stop()
    return answer, wrong
