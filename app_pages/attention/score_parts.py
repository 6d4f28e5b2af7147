"""The attention page's "Why this score" view: one chosen cell's score taken apart (plain
words first, then the parts), and every head's share of position on this text.

The numbers come from analysis/score_parts.py and analysis/positional_heads.py, the figures
from viz/score_parts.py and viz/heads.py; the chosen cell is a declared setting of the page
(`cell_query`, `cell_key` in teaching/pages.py), so links and lesson steps carry it."""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis.score_parts import decompose_cell, kind_shares, part_label, score_kinds
from analysis.seq2seq_score_parts import decompose_decoder_cell
from model.hook_names import hook_names
from ui.callbacks import pick_head
from ui.charts import chart_config
from ui.score_links import score_trace, share_of_place, token_word
from ui.text import md_escape
from ui.view_state import page_view
from viz.attribution import logit_waterfall
from viz.labels import axis_labels, plain_text
from viz.score_parts import band_bars, distance_curve, parts_grid, positional_grid

VIEW = page_view("attention")
GROUP_WORDS = {"token": "word", "position": "place", "type": "sentence A or B",
               "attention": "earlier heads", "cross": "earlier heads reading your text",
               "mlp": "earlier MLPs", "bias": "fixed biases"}
KIND_WORDS = {"place": "where the two tokens are", "words": "which words they are",
              "word and place": "one token's word meeting the other's place",
              "earlier layers": "what earlier layers wrote into the two tokens",
              "fixed biases": "the model's fixed biases",
              "soft cap": "the cap that keeps scores in a fixed range"}
FROZEN = ("Before a layer reads a token, it rescales the token's numbers to a standard size. "
          "Here each rescaling is held at the size it had in this run, so the score is an "
          "exact sum of its parts.")
# an encoder–decoder's three kinds of attention (the page's `cell_in` setting)
STACK_WORDS = {"encoder": "Encoder: your text reads itself",
               "decoder": "Decoder: the output reads what it has written so far",
               "cross": "Cross-attention: the output reads your text"}
SIDE_WORDS = {  # a group's name on one side of the grid, where it differs from GROUP_WORDS
    "decoder": {"attention": "earlier heads reading the output",
                "cross": "earlier heads reading your text"},
    "encoder": {"attention": "the encoder's heads", "mlp": "the encoder's MLPs"}}
SIDES = {"encoder": ("", ""), "decoder": ("decoder", "decoder"), "cross": ("decoder", "encoder")}
CROSS_FROZEN = ("Your text reaches the decoder as the encoder's output, which passes one last "
                "rescaling; that one is held at its size in this run too, so each key splits "
                "into what the encoder's parts wrote.")
POSITIONAL = ("How much of each head's pattern is place: for every query, how its scores "
              "differ between the keys, and the share of that spread the place-only score "
              "explains (1 = the place alone decides, 0 = the place adds nothing). The "
              "place-only score is the part with no word in it: position × position (and "
              "fixed biases); T5's distance bias; with rotating positions, the text's average "
              "query and key put at the two places.")


def _scores_row(trace, stack: str, layer: int, head: int, query: int) -> np.ndarray:
    """[key]: the row of weights (or pre-softmax scores) of `query` in the chosen head."""
    if stack == "encoder":
        return trace.attention(layer, head)[query].numpy()
    names = hook_names(trace.dec_cfg, decoder=True)
    name = names.attn(layer, "scores") if stack == "decoder" else names.cross_attn(
        layer, "scores")
    return trace.cache[name][0, head, query].numpy()


def _chosen_cell(trace, stack: str, layer: int, head: int, n_query: int,
                 n_key: int) -> tuple[int, int]:
    """The query and key of the cell: the page's settings (read from a link before the page
    draws), else the last query token and the key it looks at most in this head."""
    query = VIEW.setdefault("cell_query")
    if query is None or not 0 <= query < n_query:
        query = VIEW["cell_query"] = n_query - 1
    key = VIEW.setdefault("cell_key")
    if key is None or not 0 <= key < n_key:
        key = VIEW["cell_key"] = int(np.argmax(_scores_row(trace, stack, layer, head, query)))
    return query, key


def _new_stack() -> None:
    """Another kind of attention: its own default cell (the old one may not exist there)."""
    VIEW["cell_query"] = VIEW["cell_key"] = None


def _which_attention(trace) -> tuple[str, int | None, int | None]:
    """An encoder–decoder's choice of attention, and for the decoder's the layer and head of
    the cross-attention sliders above: (stack, layer, head), layer and head None for the
    encoder (the page's own sliders)."""
    stack = st.radio("Which attention", list(STACK_WORDS), key=VIEW.key("cell_in"),
                     format_func=STACK_WORDS.get, horizontal=True, on_change=_new_stack)
    if stack == "encoder":
        return stack, None, None
    layer = VIEW.setdefault("cross_layer", trace.dec_cfg.n_layers - 1)
    head = VIEW.setdefault("cross_head")
    st.caption(f"Decoder layer {layer}, head {head}: the “Decoder layer” and “Decoder "
               "head” sliders above choose them.")
    return stack, layer, head


def sentence(shares: dict[str, float], rotary: bool, cross: bool = False) -> str:
    """'58% of this score comes from where the two tokens are, 30% from which words they
    are': the kinds of at least 5%, largest first (`cross`: the key is a token of the text
    the encoder read)."""
    words = dict(KIND_WORDS)
    if rotary:
        words["words"] = "which words they are, each turned by where it stands"
    if cross:
        words["earlier layers"] = ("what earlier layers wrote into the two tokens (into your "
                                   "text's token, the encoder's layers)")
    big = sorted(((v, k) for k, v in shares.items() if v >= 0.05), reverse=True)
    if not big:
        return "No kind of part stands out in this score."
    first, *rest = [f"{round(100 * v)}% from {words[k]}" for v, k in big]
    return (first.replace("% from", "% of this score comes from", 1)
            + "".join(f", {r}" for r in rest) + ".")


def show_score_parts(selection, trace, layer: int, head: int) -> None:
    """The view, under the heatmap of `head` in `layer`."""
    if trace.kind == "foreign":
        st.info("Taking a score apart needs each head's queries and keys, and Hugging Face's "
                "own code gives only the attention weights: it works for a model family this "
                "app knows.")
        return
    full = score_trace(selection)
    stack = "encoder"
    if trace.kind == "encoder_decoder":
        stack, d_layer, d_head = _which_attention(trace)
        layer, head = (layer, head) if d_layer is None else (d_layer, d_head)
    q_tokens = trace.tokens if stack == "encoder" else trace.decoder_tokens[0]
    k_tokens = trace.decoder_tokens[0] if stack == "decoder" else trace.tokens
    q_labels, k_labels = axis_labels(q_tokens), axis_labels(k_tokens)
    cols = st.columns(2)
    _chosen_cell(full, stack, layer, head, len(q_tokens), len(k_tokens))
    query = cols[0].selectbox("Query token (the one looking)", range(len(q_tokens)),
                              key=VIEW.key("cell_query"),
                              format_func=lambda i: plain_text(q_labels[i]))
    key = cols[1].selectbox("Key token (the one looked at)", range(len(k_tokens)),
                            key=VIEW.key("cell_key"),
                            format_func=lambda i: plain_text(k_labels[i]))
    try:
        cell = (decompose_cell(selection.model, full, layer, head, query, key)
                if stack == "encoder" else
                decompose_decoder_cell(selection.model, full, stack, layer, head, query, key))
    except ValueError as exc:
        st.info(str(exc))
        return
    _words_and_grid(cell, trace)
    _special_terms(cell, trace.cfg)
    if cell.bands is not None:
        _rotary(cell)
    if stack == "encoder":
        with st.expander("Every head: how much of its pattern is place"):
            if trace.kind == "encoder_decoder":
                st.caption("The encoder's heads, which read your text.")
            _positional_grid(selection, full)


def _group_words(group: str, side: str) -> str:
    return SIDE_WORDS.get(side, {}).get(group, GROUP_WORDS[group])


def _words_and_grid(cell, trace) -> None:
    rotary = trace.cfg.positions == "rotary"
    shares = kind_shares(score_kinds(cell))
    k_tokens = cell.tokens if cell.key_tokens is None else cell.key_tokens
    q, k = md_escape(token_word(cell.tokens, cell.query)), md_escape(token_word(k_tokens,
                                                                                cell.key))
    q_word, k_word = {"encoder": ("token", "token"), "decoder": ("output token", "output token"),
                      "cross": ("output token", "text token")}[cell.stack]
    st.markdown(f"**Why does “{q}” ({q_word} {cell.query}) look at “{k}” ({k_word} "
                f"{cell.key})?** The score of this pair is "
                f"**{cell.score:.3f}** (before the softmax). "
                + sentence(shares, rotary, cell.stack == "cross"))
    st.caption(FROZEN + (" " + CROSS_FROZEN if cell.stack == "cross" else "")
               + f" The parts below add up to {cell.total():.3f}; the model computed "
               f"{cell.score:.3f}.")
    q_side, k_side = SIDES[cell.stack]
    if st.toggle("Every layer and head on its own", key="attn_score_parts_each"):
        terms = [(f"query's {part_label(a, q_side)} × key's {part_label(b, k_side)}",
                  cell.grid[i, j])
                 for i, a in enumerate(cell.q_keys) for j, b in enumerate(cell.k_keys)]
        terms += list(cell.extra.items())
        top = sorted(terms, key=lambda t: -abs(t[1]))[:12]
        fig = logit_waterfall([n for n, _ in top], [v for _, v in top], "these 12 together",
                              f"The 12 largest of {len(terms)} terms", value_name="score")
        st.plotly_chart(fig, key="attn_score_terms", config=chart_config("score-terms"))
        return
    _grid(cell)


def _grid(cell) -> None:
    """The score's parts grouped: the query's parts down, the key's across."""
    q_side, k_side = SIDES[cell.stack]
    qg, kg, grouped = cell.grouped()
    where = {"encoder": "Layer", "decoder": "Decoder layer",
             "cross": "Cross-attention, decoder layer"}[cell.stack]
    fig = parts_grid([_group_words(g, q_side) for g in qg], [_group_words(g, k_side)
                                                             for g in kg], grouped,
                     f"{where} {cell.layer}, head {cell.head}: the score in parts",
                     "Rows: the query's parts; columns: the key's parts; each cell one × the "
                     f"other. They add up to {float(grouped.sum()):.3f}" + _extras(cell))
    st.plotly_chart(fig, key="attn_score_grid", config=chart_config("score-parts"))


def _extras(cell) -> str:
    """The end of the grid's subtitle: what the grid leaves out, and the score with it."""
    if not cell.extra:
        return "."
    said = {"relative position": "the distance bias", "soft cap": "the cap"}
    added = " and ".join(f"{said[k]} ({v:+.3f})" for k, v in cell.extra.items())
    return f"; with {added}, the score {cell.total():.3f}."


def _special_terms(cell, cfg) -> None:
    if "relative position" in cell.extra:
        st.caption("This model adds a learned number for how far apart the two tokens are: "
                   f"{cell.extra['relative position']:+.3f} of this score.")
    if "soft cap" in cell.extra:
        st.caption("This model squashes every score into a fixed range; here that changes it "
                   f"by {cell.extra['soft cap']:+.3f}.")
    if len(cell.shared_with) > 1:
        others = [str(h) for h in cell.shared_with if h != cell.head]
        heads = f"head {others[0]}" if len(others) == 1 else "heads " + ", ".join(others)
        st.caption(f"Head {cell.head} shares its keys with {heads} (key head "
                   f"{cell.kv_head} of {cfg.n_kv_heads}).")


def _rotary(cell) -> None:
    st.markdown("This model marks where a token stands by turning its query and key. Each "
                "pair of numbers turns at its own speed; the score splits exactly over them:")
    fig = band_bars(cell.band_periods, cell.bands, "The score by how fast each pair turns",
                    "Fast pairs (left) tell near from far; slow ones (right) barely turn.")
    st.plotly_chart(fig, key="attn_score_bands", config=chart_config("score-bands"))
    own = cell.query - cell.key
    apart = f"{own} token{'s' * (own != 1)} apart"
    fig = distance_curve(cell.distances, cell.curve, own, "The same two tokens at other "
                         "distances", f"The red dot is where they are: {apart}.")
    st.plotly_chart(fig, key="attn_score_curve", config=chart_config("score-distance"))


def _positional_grid(selection, trace) -> None:
    fig = positional_grid(share_of_place(selection, trace),
                          "How much of each head's pattern is place",
                          "Click a head to open it above.")
    st.plotly_chart(fig, key="attn_positional_grid", on_select=pick_head(
        "attn_positional_grid", trace.cfg.n_heads), selection_mode="points",
        config=chart_config("positional-heads"))
    st.caption(POSITIONAL)


# ------------------------------------------------------------------ a lesson step's figures
FULL_PAGE_ONLY = ("This model's scores are taken apart on the full page (its “Why this score” "
                  "view).")


def score_parts_figure(selection, trace, layer: int, head: int) -> None:
    """A lesson step's one figure: the step's cell of `head` in `layer` taken apart, grouped
    (the cell from the step's settings, else the page's default); no controls."""
    if trace.kind in ("foreign", "encoder_decoder"):
        st.info(FULL_PAGE_ONLY)
        return
    full = score_trace(selection)
    n = len(trace.tokens)
    query, key = _chosen_cell(full, "encoder", layer, head, n, n)
    _grid(decompose_cell(selection.model, full, layer, head, query, key))


def place_grid_figure(selection, trace) -> None:
    """A lesson step's one figure: every head, coloured by how much of its pattern is place."""
    if trace.kind in ("foreign", "encoder_decoder"):
        st.info(FULL_PAGE_ONLY)
        return
    fig = positional_grid(share_of_place(selection, score_trace(selection)),
                          "How much of each head's pattern is place")
    st.plotly_chart(fig, key="attn_positional_grid", config=chart_config("positional-heads"))
    st.caption(POSITIONAL)
