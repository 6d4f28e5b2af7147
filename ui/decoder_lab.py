"""Shared pieces of the decoder-lab pages (/generate, /attribution): why a model does not apply,
the page's own settings read from a link, and their cached computations (in the server's one
memory budget, shared by every session; never mutate what they return)."""

from __future__ import annotations

import streamlit as st
import torch

from analysis.attribution import Attribution, attribute_ids, attribution_unavailable
from analysis.generation import Generation, Sampling, decoder_unavailable, generate_ids
from analysis.induction import fresh_repeats, induction_score, pattern_cache
from model.hook_names import hook_names

from .cache import get_model, shared
from .switch import needs_lm_head
from .text import md_escape

def decoder_reason(selection, what: str, attribution: bool = False) -> str | None:
    """Why `what` does not apply to the sidebar's model (Markdown, escaped), or None."""
    reason = needs_lm_head(selection, what)
    if reason is not None:
        return reason
    why = (attribution_unavailable if attribution else decoder_unavailable)(selection.model)
    return None if why is None else md_escape(why)


@shared("generation")
def generation(model_name: str, prompt_ids: tuple, n_new: int, sampling: Sampling) -> Generation:
    with st.spinner("Writing, one token at a time…"):
        return generate_ids(get_model(model_name), list(prompt_ids), n_new, sampling)


@shared("gen_induction_head")
def induction_head(model_name: str) -> tuple[int, int, float]:
    """(layer, head, score) of the head with the highest induction score, on a few fresh
    random sequences repeated twice (analysis/induction.py), read through hooks."""
    model = get_model(model_name).model
    length = max(2, min(20, model.cfg.n_ctx // 2))
    ids = fresh_repeats(torch.Generator().manual_seed(0), 8, length, model.cfg.d_vocab)
    cache = pattern_cache(model, ids.to(next(model.parameters()).device))
    scores = torch.stack([induction_score(cache[name].float().cpu())  # [layer, head]
                          for name in hook_names(model.cfg).every_layer("attn", "pattern")])
    layer, head = divmod(int(scores.argmax()), model.cfg.n_heads)
    return layer, head, float(scores[layer, head])


@shared("attribution")
def attribution(model_name: str, text: str, pair: str, position: int, target: int,
                baseline: int | None, _ids) -> Attribution:
    """Direct logit attribution on the token ids the sidebar's run read (_ids, keyed by the
    model, text and pair)."""
    return attribute_ids(get_model(model_name), _ids, position, target, baseline)
