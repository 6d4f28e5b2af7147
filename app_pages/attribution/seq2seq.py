"""The attribution page for an encoder–decoder (BART, Marian, T5): one decoder position's logit
taken apart into the decoder's embeddings, every self-attention head, every cross-attention
head (the heads that read the source), every MLP and the biases. The decoder reads the output
the model wrote for the sidebar's text (the sidebar's run). The sum check is passed in from
app_pages/attribution/page.py, so both kinds of model share it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.charts import chart_config
from ui.decoder_lab import (
    logit_pickers, logit_view, score_words, seq2seq_attribution, token_choices,
)
from ui.text import md_escape
from viz.attribution import head_attribution_grid, logit_waterfall
from viz.labels import axis_labels, looks_byte_level, plain_text, visible_text
from viz.numbers import plain

NOTHING_WRITTEN = "The decoder wrote nothing for this text, so there is no score to take apart."
GRID_PX = 460  # the two head grids side by side on a wide screen, stacked on a narrow one


def _choices(loaded, trace, pos: int, extra=()) -> tuple[list[int], dict[int, str]]:
    """The likeliest tokens after decoder position `pos`, the token the model wrote there, and
    any from a link; with labels (probability, rank)."""
    dec = trace.decoder_ids[0].tolist()
    wrote = dec[pos + 1] if pos + 1 < len(dec) else None
    return token_choices(loaded, trace.decoder_logits[0, pos], wrote,
                         "what the model wrote next", extra)


def _pickers(loaded, trace, view):
    labels = axis_labels(trace.decoder_tokens[0])
    picked = logit_pickers(view, labels, "Decoder position (the output token whose next-token "
                           "score is explained)",
                           lambda pos, asked: _choices(loaded, trace, pos, asked))
    return (*picked, labels)


def _parts(a) -> tuple[list[str], list[float]]:
    names = [f"{k} embedding" for k in a.embeddings]
    values = list(a.embeddings.values())
    if a.post_norm:
        names.append("norm after the embeddings: its bias")
        values.append(a.embed_norm_bias)
    rows = a.per_layer()  # [layer, 3]
    for layer in range(rows.shape[0]):
        for i, what in enumerate(("self-attention", "cross-attention", "MLP")):
            names.append(f"layer {layer} {what}")
            values.append(float(rows[layer, i]))
        if a.post_norm:
            names.append(f"layer {layer} norms' biases")
            values.append(float(a.norm_bias[layer]))
    if a.final_norm_bias:  # a final LayerNorm (tiny-reverse); T5's RMSNorm has no bias
        names.append("final norm's bias")
        values.append(a.final_norm_bias)
    if a.logits_bias or a.post_norm:
        names.append("the logits' own bias")
        values.append(a.logits_bias)
    return names, values


def _frozen_note(loaded, a) -> str:
    if not a.post_norm:
        centred = getattr(loaded.model.decoder.ln_final, "centred", False)
        spread = ("its spread (standard deviation) after taking away its mean" if centred
                  else "its root mean square")
        note = (f"**Frozen scale.** Just before the scores, the decoder's final norm divides the "
                f"running sum by {spread}; here that divisor is held at the value it "
                f"had in this run (it divides by {plain(1 / a.norm_scale, 3)}).")
        if a.out_scale != 1.0:
            note += (f" Because the output layer shares its weights with the token embedding, "
                     f"the result is also multiplied by {plain(a.out_scale, 4)} (one over the "
                     f"square root of the vector's {loaded.model.dec_cfg.d_model} numbers).")
        return note + (" So every part's share is a plain number and the shares add up exactly "
                       "to the score; each is the part's *direct* effect.")
    return ("**Frozen scales.** In this model every attention and every MLP is followed by a "
            "norm. Each norm's divisor is held at the value it had in this run, so the whole "
            "path from a part to the score is a plain sum and the shares add up exactly. A "
            "part's share is its *direct* effect through all the norms after it: early parts "
            "pass through many norms, so their direct shares are often small; what they change "
            "in later layers is not counted here.")


def _explained(selection, trace, pos: int, target: int, base: int | None, names: dict):
    """(the parts of the chosen score, "logit" or "logit difference", whose score it is)."""
    src = trace.token_ids.reshape(-1)[:trace.n_tokens].tolist()
    a = seq2seq_attribution(selection.model_name, tuple(src),
                            tuple(trace.decoder_ids[0].tolist()), pos, target, base)
    return (a, *score_words(names, target, base))


def _waterfall(a, what: str, word: str, pos: int, labels: list[str]) -> None:
    fig = logit_waterfall(*_parts(a), total_name=f"= the {what}",
                          title=f"How the {what} of {word} is built, part by part",
                          subtitle=f"after decoder position {pos} ({plain_text(labels[pos])}); "
                          "red adds, blue takes away; the last bar is the sum", value_name=what)
    st.plotly_chart(fig, key="attr_layers", config=chart_config("attribution-layers", fig,
                                                                 position=pos))


def _head_grids(a, what: str, pos: int) -> None:
    """The self- and cross-attention heads' grids, on one colour scale."""
    top = float(max(abs(a.self_heads).max(), abs(a.cross_heads).max(), 1e-12))
    row = st.container(horizontal=True, gap="small")  # side by side, or one under the other
    for heads, title, key in (
            (a.self_heads, "Self-attention: heads that read the output so far", "attr_grid"),
            (a.cross_heads, "Cross-attention: heads that read your text", "attr_cross_grid")):
        grid = head_attribution_grid(heads, title=title, subtitle="each head's direct part of "
                                     f"the {what}; red pushes the target up, blue down",
                                     value_name=what)
        grid.data[0].update(zmin=-top, zmax=top)
        row.container(width=GRID_PX).plotly_chart(
            grid, key=key, config=chart_config(key.replace("_", "-"), grid, position=pos))


def seq2seq_attribution_figure(selection, trace, view, name: str) -> None:
    """A lesson step's one figure (app_pages/attribution/page.py: figure): the decoder's score part
    by part, or its heads' grids; no controls."""
    if trace.decoder_ids is None or trace.decoder_ids.shape[1] == 0:
        st.info(NOTHING_WRITTEN)
        return
    labels = axis_labels(trace.decoder_tokens[0])
    pos, target, base, names = logit_view(
        view, len(labels), lambda pos, asked: _choices(selection.model, trace, pos, asked))
    a, what, word = _explained(selection, trace, pos, target, base, names)
    if name == "heads":
        _head_grids(a, what, pos)
    else:
        _waterfall(a, what, word, pos, labels)


def render_seq2seq_attribution(selection, trace, view, sum_check) -> None:
    loaded = selection.model
    st.caption("This model is an encoder–decoder: the encoder reads your text, and the decoder "
               "writes an output one token at a time. Here the score of the decoder's next token "
               "is taken apart; the cross-attention heads are the ones that read your text.")
    if trace.decoder_ids is None or trace.decoder_ids.shape[1] == 0:
        st.info(NOTHING_WRITTEN)
        return
    byte_level = looks_byte_level(trace.decoder_tokens[0])
    wrote = " ".join(visible_text(t, byte_level) for t in trace.decoder_tokens[0])
    st.caption(f"The decoder reads what it wrote for your text, token by token: "
               f"{md_escape(wrote)}")
    pos, target, base, names, labels = _pickers(loaded, trace, view)
    a, what, word = _explained(selection, trace, pos, target, base, names)
    st.info(_frozen_note(loaded, a))
    sum_check(a, what)
    _waterfall(a, what, word, pos, labels)
    st.subheader("Every head")
    st.caption("Both grids share one colour scale, so their cells compare directly.")
    _head_grids(a, what, pos)
    with st.expander("Every part as a table"):
        table = pd.DataFrame(a.components(), columns=["part", what])
        st.dataframe(table, hide_index=True, width="stretch", key="attr_table",
                     column_config={what: st.column_config.NumberColumn(format="%+.4f")})
