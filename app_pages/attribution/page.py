"""Which parts made the logit: direct logit attribution. The logit of one token at one position
taken apart into what the embeddings, every head, every MLP and the biases wrote."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui.callbacks import open_chosen_head, pick_head
from ui.charts import chart_config
from analysis.seq2seq_runs import is_seq2seq
from ui.decoder_lab import (
    attribution, decoder_reason, logit_pickers, logit_view, score_words, token_choices,
)
from ui.sidebar import require_trace
from ui.switch import open_on_decoder, opened_note
from ui.view_state import page_view
from viz.attribution import head_attribution_grid, logit_waterfall
from viz.numbers import gap, plain
from viz.labels import axis_labels, plain_text

from .seq2seq import render_seq2seq_attribution, seq2seq_attribution_figure

VIEW = page_view("attribution")  # this page's settings (teaching/pages.py declares them)
SHOWN = 1e-4  # the metrics show 4 decimals: a smaller gap reads "≈ 0"



def _choices(loaded, trace, pos: int, extra=()) -> tuple[list[int], dict[int, str]]:
    """Token ids offered at `pos`: the likeliest, the true next token, any `extra` (from a
    link); and their labels with probability and rank."""
    ids_all = trace.token_ids.reshape(-1).tolist()
    nxt = int(ids_all[pos + 1]) if pos + 1 < trace.n_tokens else None
    return token_choices(loaded, trace.logits[0, pos], nxt, "the true next token", extra)


def _pickers(loaded, trace, labels):
    """Position, mode, target and baseline. Returns (pos, target, baseline or None, names)."""
    return logit_pickers(
        VIEW, labels[:trace.n_tokens], "Position (the token whose next-token score is explained)",
        lambda pos, asked: _choices(loaded, trace, pos, asked),  # a link's or a lesson's too
        target_help="The likeliest next tokens here (the first is the model's prediction), "
                    "and the true next token of your text.")


def _parts(a) -> tuple[list[str], list[float]]:
    """The waterfall's bars: embeddings, then each layer's attention and MLP, then the norm."""
    names = [f"{k} embedding" for k in a.embeddings]
    values = list(a.embeddings.values())
    per_layer = a.per_layer()  # [layer, 2]
    for layer in range(per_layer.shape[0]):
        names.append(f"layer {layer} attention")  # all its heads: the subtitle says so
        values.append(float(per_layer[layer, 0]))
        if a.has_mlp:
            names.append(f"layer {layer} MLP")
            values.append(float(per_layer[layer, 1]))
    names.append("final norm's bias")
    values.append(a.norm_bias)
    return names, values


def _sum_check(a, what: str) -> None:
    total = a.total()
    st.caption(f"The {what} the model computed in this run, and the sum of all the parts "
               "below: they are the same number.")
    cols = st.columns(3)
    cols[0].metric("From the model", f"{a.value:.4f}", help=f"The model's own {what}.")
    cols[1].metric("Sum of the parts", f"{total:.4f}")
    off = abs(total - a.value)  # below the 4 decimals shown above: "≈ 0", the exact gap in help
    cols[2].metric("Gap", "≈ 0" if off < SHOWN else plain(off),
                   help=f"The gap is {gap(off, note='')}: rounding in the last digits of the "
                   "computer's arithmetic.")


def _explained(selection, trace, pos: int, target: int, base: int | None, names: dict):
    """The attribution of the chosen score: (the parts, "logit" or "logit difference", the
    token or tokens it is the score of)."""
    a = attribution(selection.model_name, selection.text, selection.pair, pos, target, base,
                    trace.token_ids.reshape(-1)[:trace.n_tokens])
    return (a, *score_words(names, target, base))


def _layers_chart(a, what: str, word: str, pos: int, labels: list[str]) -> None:
    fig = logit_waterfall(*_parts(a), total_name=f"= the {what}",
                          title=f"How the {what} of {word} is built, part by part",
                          subtitle=f"after position {pos} ({plain_text(labels[pos])}); red adds, "
                          "blue takes away; the last bar is the sum; “attention”: all heads of "
                          "that layer together", value_name=what)
    st.plotly_chart(fig, key="attr_layers", config=chart_config("attribution-layers", fig,
                                                                 position=pos))


def _heads_chart(a, what: str, pos: int, n_heads: int) -> None:
    grid = head_attribution_grid(a.heads, title="Each head's direct part of the " + what,
                                 subtitle="red pushes the target up, blue down; click a head to "
                                 "open its attention", value_name=what)
    st.plotly_chart(grid, key="attr_grid", selection_mode="points",
                    on_select=pick_head("attr_grid", n_heads),
                    config=chart_config("attribution-heads", grid, position=pos))


def render(selection) -> None:
    st.title("Which parts made the logit", anchor=False)
    st.caption(
        "A model that writes text gives every possible next token a score, its *logit*: the "
        "higher, the likelier. Inside the model, every part writes into one running sum (the "
        "residual stream): the embeddings, then every head and every MLP (the small network "
        "after each attention layer). The score is read off "
        "that sum at the end, so it can be taken apart: this page shows how much each part added "
        "to it directly.")
    trace = require_trace(selection)
    reason = decoder_reason(selection, "Taking the score apart", attribution=True,
                            seq2seq_ok=True)
    if reason is not None:
        open_on_decoder(selection, reason, key="attr_switch")
        st.stop()
    opened_note(selection, key="attr_switch")

    loaded, cfg = selection.model, trace.cfg
    if is_seq2seq(loaded):  # the decoder's score, with its cross-attention heads
        render_seq2seq_attribution(selection, trace, VIEW, _sum_check)
        return
    labels = axis_labels(trace.tokens)
    pos, target, base, names = _pickers(loaded, trace, labels)
    a, what, word = _explained(selection, trace, pos, target, base, names)
    norm = "its root mean square" if not getattr(loaded.model.ln_final, "centred", True) else \
        "its spread (standard deviation) after taking away its mean"
    st.info(f"**Frozen scale.** Just before the scores, the final norm divides the running sum by "
            f"{norm}. Here that divisor is held at the value it had in this run (it divides "
            f"by {plain(1 / a.norm_scale, 3)}), so every part's share is a plain number and the "
            "shares add up "
            "exactly to the score; each share is the part's *direct* effect, not what it changes "
            "in later layers.")
    _sum_check(a, what)
    _layers_chart(a, what, word, pos, labels)
    st.subheader("Every head")
    _heads_chart(a, what, pos, cfg.n_heads)
    box, button = st.columns([3, 1], vertical_alignment="bottom")
    order = np.argsort(-np.abs(a.heads).reshape(-1))
    heads = [divmod(int(i), cfg.n_heads) for i in order]
    box.selectbox("Or pick a head (largest parts first)", heads, key="attr_open_head",
                  format_func=lambda lh: f"layer {lh[0]}, head {lh[1]}: "
                  f"{a.heads[lh[0], lh[1]]:+.3f}")
    button.button("Open its attention", key="attr_open_btn",
                  on_click=open_chosen_head("attr_open_head"))

    with st.expander("Every part as a table"):
        table = pd.DataFrame(a.components(), columns=["part", what])
        st.dataframe(table, hide_index=True, width="stretch", key="attr_table",
                     column_config={what: st.column_config.NumberColumn(format="%+.4f")})


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py), for the step's position and token:
    the score built part by part, or every head's direct part of it; no controls."""
    trace = require_trace(selection)
    reason = decoder_reason(selection, "Taking the score apart", attribution=True,
                            seq2seq_ok=True)
    if reason is not None:
        st.info(reason)
        return
    loaded = selection.model
    if is_seq2seq(loaded):
        seq2seq_attribution_figure(selection, trace, VIEW, name)
        return
    labels = axis_labels(trace.tokens)
    pos, target, base, names = logit_view(VIEW, trace.n_tokens, lambda pos, asked: _choices(
        loaded, trace, pos, asked))
    a, what, word = _explained(selection, trace, pos, target, base, names)
    if name == "heads":
        _heads_chart(a, what, pos, trace.cfg.n_heads)
    else:
        _layers_chart(a, what, word, pos, labels)
