"""Shared pieces of the decoder-lab pages (/generate, /attribution): why a model does not apply,
the page's own settings read from a link, and their cached computations (in the server's one
memory budget, shared by every session; never mutate what they return). Encoder–decoders
(BART, Marian, T5) have their own cached generation and attribution here."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
import torch

from analysis.attribution import Attribution, attribute_ids, attribution_unavailable
from analysis.generation import Generation, Sampling, decoder_unavailable, generate_ids
from analysis.induction import fresh_repeats, induction_score, pattern_cache
from analysis.seq2seq_attribution import Seq2SeqAttribution, attribute_seq2seq
from analysis.seq2seq_generation import Seq2SeqGeneration, Seq2SeqStart, generate_seq2seq
from analysis.seq2seq_runs import is_seq2seq
from model.hook_names import hook_names
from viz.labels import looks_byte_level, plain_text, visible_text
from viz.numbers import percent

from .cache import get_model, shared
from .switch import needs_lm_head
from .text import md_escape

N_CHOICES = 10  # tokens offered for a logit: the likeliest, then the true or written next one
MODES = {"one": "One token's logit", "diff": "Difference between two tokens"}


def decoder_reason(selection, what: str, attribution: bool = False,
                   seq2seq_ok: bool = False) -> str | None:
    """Why `what` does not apply to the sidebar's model (Markdown, escaped), or None.
    seq2seq_ok: BART, Marian and T5 apply too (a page that takes their decoder apart)."""
    if seq2seq_ok and selection.model is not None and is_seq2seq(selection.model):
        return None
    reason = needs_lm_head(selection, what)
    if reason is not None:
        return reason
    why = (attribution_unavailable if attribution else decoder_unavailable)(selection.model)
    return None if why is None else md_escape(why)


@shared("generation")
def generation(model_name: str, prompt_ids: tuple, n_new: int, sampling: Sampling,
               stop_ids: tuple = ()) -> Generation:
    """Stops early after a token of stop_ids (generation_config.json's end tokens)."""
    with st.spinner("Writing, one token at a time…"):
        return generate_ids(get_model(model_name), list(prompt_ids), n_new, sampling, stop_ids)


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


@shared("seq2seq_generation")
def seq2seq_generation(model_name: str, source_ids: tuple, n_new: int, sampling: Sampling,
                       start: Seq2SeqStart) -> Seq2SeqGeneration:
    with st.spinner("Writing, one token at a time…"):
        return generate_seq2seq(get_model(model_name), list(source_ids), n_new, sampling, start)


@shared("seq2seq_attribution")
def seq2seq_attribution(model_name: str, source_ids: tuple, decoder_ids: tuple, position: int,
                        target: int, baseline: int | None) -> Seq2SeqAttribution:
    """Direct logit attribution in the decoder reading decoder_ids over the source."""
    return attribute_seq2seq(get_model(model_name), list(source_ids), list(decoder_ids),
                             position, target, baseline)


def token_choices(loaded, logits_row, nxt: int | None, nxt_note: str,
                  extra=()) -> tuple[list[int], dict[int, str]]:
    """Token ids offered for one position's logit: the N_CHOICES likeliest, the next token
    `nxt` (marked with `nxt_note`) and any `extra` (from a link); each labelled with its
    probability and rank."""
    probs = logits_row.double().softmax(-1)  # [vocab]
    ids = probs.argsort(descending=True)[:N_CHOICES].tolist()
    for i in [nxt, *extra]:
        if i is not None and 0 <= int(i) < probs.numel() and int(i) not in ids:
            ids.append(int(i))
    words = loaded.tokenizer.tokens(ids)
    byte_level = looks_byte_level(words)
    rank = {i: int((probs > probs[i]).sum()) + 1 for i in ids}
    names = {i: f"“{visible_text(w, byte_level)}”  {percent(float(probs[i]))}, #{rank[i]}"
             + (f"  ({nxt_note})" if i == nxt else "") for i, w in zip(ids, words)}
    return ids, names


def logit_pickers(view, labels: list[str], position_label: str,
                  choices: Callable[[int, list], tuple[list[int], dict[int, str]]],
                  target_help: str | None = None) -> tuple[int, int, int | None, dict]:
    """The attribution pages' controls: the position, one logit or a difference, the target
    token and the one subtracted. `choices(pos, asked)` gives the token ids offered at `pos`
    (with a link's or a lesson's `asked` ones) and their labels. Returns (pos, target,
    baseline or None, labels of the ids)."""
    n = len(labels)
    _settle_position(view, n)
    cols = st.columns([3, 2])
    pos = cols[0].select_slider(position_label, list(range(n)), key=view.key("pos"),
                                format_func=lambda i: plain_text(labels[i])) if n > 1 else 0
    mode = cols[1].radio("Explain", list(MODES), key=view.key("mode"), format_func=MODES.get,
                         horizontal=True)
    ids, names = _settle_tokens(view, pos, choices)
    cols = st.columns(2)
    target = cols[0].selectbox("Target token", ids, key=view.key("target"),
                               format_func=names.get, help=target_help)
    base = None
    if mode == "diff":
        base = cols[1].selectbox("Minus the logit of", ids, key=view.key("base"),
                                 format_func=names.get)
        if base == target:
            cols[1].warning("Pick two different tokens: their difference is 0.")
            base = None
    return pos, target, base, names


def _settle_position(view, n: int) -> None:
    """The mode and position in the session: the link's or the lesson's, else the last one."""
    view.setdefault("mode")
    if view.setdefault("pos", n - 1) not in range(n):
        view["pos"] = n - 1


def _settle_tokens(view, pos: int, choices) -> tuple[list[int], dict[int, str]]:
    """The target and subtracted tokens in the session (one offered at `pos`, else the
    likeliest two); returns the ids offered and their labels."""
    asked = [v for v in (view.given("target"), view.given("base")) if v is not None]
    ids, names = choices(pos, asked)
    for name, fallback in (("target", ids[0]), ("base", ids[1 % len(ids)])):
        view[name] = view.given(name) if view.given(name) in ids else fallback
    return ids, names


def logit_view(view, n: int, choices) -> tuple[int, int, int | None, dict]:
    """What `logit_pickers` returns, read from the session without drawing its controls (a
    lesson step's figure): (pos, target, baseline or None, labels of the ids)."""
    _settle_position(view, n)
    pos = view["pos"] if n > 1 else 0
    _, names = _settle_tokens(view, pos, choices)
    target = view["target"]
    if view["mode"] != "diff":  # the second token is read only for a difference, as the page does
        return pos, target, None, names
    base = view["base"]
    return pos, target, base if base != target else None, names


def score_words(names: dict, target: int, base: int | None) -> tuple[str, str]:
    """What the attribution takes apart ("logit" or "logit difference") and whose score it is
    (the target token, or "“a” minus “b”"), from the tokens' labels."""
    word = names[target].split("  ")[0]
    if base is None:
        return "logit", word
    return "logit difference", f"{word} minus {names[base].split('  ')[0]}"
