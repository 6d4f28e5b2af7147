"""Ways into the attention page's "Why this score" from the pages that teach where a score
comes from: the positions page names the heads its positions drive on this text, and the
walkthrough's Q·K step opens one of its own scores taken apart. Every button is a jump to a
declared view of /attention (ui/view_state.py): layer, head, the view and the cell."""

from __future__ import annotations

import streamlit as st

from analysis.positional_heads import most_positional, positional_map, telling_cell
from analysis.score_parts import needed
from analysis.seq2seq_score_parts import needed_decoder
from ui.cache import cached_run, shared
from ui.text import md_escape
from ui.view_state import jump
from viz.labels import looks_byte_level, visible_text

SPACE_MARKS = "␣▁"  # a word's leading space, as byte-level and SentencePiece tokens mark it
WHY = "Why this score"  # the attention page's view (teaching/pages.py ATTENTION_VIEWS)
SHOWN_HEADS = 3
SCHEME_WORDS = {"learned": "its learned position table", "sinusoidal": "its sinusoidal table",
                "rotary": "turning queries and keys", "relative": "its bias by distance"}


def token_word(tokens, i: int) -> str:
    """Token `i` as a learner reads it in a sentence: its text without the mark of the space
    before it, and with no position number ("sat", "[CLS]")."""
    text = visible_text(tokens[i], looks_byte_level(tokens))
    return text.lstrip(SPACE_MARKS) or text


def looks_at(tokens, query: int, key: int) -> str:
    """'why does “on” look at “sat”?', or '... look at itself?' for a token's own cell
    (Markdown-escaped, for a button's label)."""
    q = md_escape(token_word(tokens, query))
    target = "itself" if query == key else f"“{md_escape(token_word(tokens, key))}”"
    return f"why does “{q}” look at {target}?"


def why_button(container, label: str, layer: int, head: int, query: int, key: int,
               widget_key: str, help: str | None = None) -> None:
    """A button that opens head `head` of `layer` on /attention with the score of (query,
    key) taken apart, keeping the model and the text."""
    container.button(label, key=widget_key, help=help, on_click=jump(
        "attention", layer=int(layer), head=int(head), view=WHY, cell_query=int(query),
        cell_key=int(key)))


def score_trace(selection):
    """The run "Why this score" reads (the same one the attention page keeps for it); an
    encoder–decoder's keeps what its decoder's scores are taken apart from too."""
    dec_cfg = getattr(getattr(selection.model, "model", None), "dec_cfg", None)
    more = () if dec_cfg is None else needed_decoder(dec_cfg)
    return cached_run(selection.model_name, selection.text, selection.pair or "",
                      keep=needed(selection.model.cfg, more), kind="score_parts")


@shared("positional_heads")
def positional_share(_selection, _trace, model_name: str, text: str, pair: str):
    """[layer, head]: every head's share of place on this text (analysis/positional_heads.py),
    shared by the pages that show it."""
    return positional_map(_selection.model, _trace)


def share_of_place(selection, trace):
    return positional_share(selection, trace, selection.model_name, selection.text,
                            selection.pair or "")


def heads_positions_drive(selection, positions: str) -> None:
    """The positions page's section: the heads of this model whose pattern on this text is
    most a matter of place, each a button to its sharpest cell taken apart."""
    if selection.trace is None or selection.trace.kind == "foreign":
        return  # Hugging Face's own code gives no queries or keys to take apart
    trace = score_trace(selection)
    share = share_of_place(selection, trace)
    st.header("Which heads do these positions drive?")
    scheme = SCHEME_WORDS.get(positions, "its positions")
    st.markdown(f"This model marks where each token stands with {scheme}. On your text, these "
                "heads follow place the most: the share is how much of the head's pattern "
                "the place alone explains (1 = all of it, 0 = none). Open one to see a score "
                "it gives taken apart into word and place.")
    if trace.kind == "encoder_decoder":
        st.caption("The heads are the encoder's, which read your text.")
    row = st.container(horizontal=True, gap="small", key="pos_heads_row")
    for layer, head, value in most_positional(share, SHOWN_HEADS):
        query, key = telling_cell(trace, layer, head)
        why_button(row, f"Layer {layer}, head {head} ({value:.2f}): "
                   + looks_at(trace.tokens, query, key), layer, head, query, key,
                   f"pos_why_{layer}_{head}",
                   help="Opens this head on the Attention page with this score taken apart.")
    st.caption("The share for every head is on the Attention page, under “Why this score”.")


def why_from_scores_step(trace, layer: int, head: int) -> None:
    """The walkthrough's Q·K step: one of its own scores (where this head looks most sharply)
    opened on the attention page, taken apart into the parts that made it."""
    if trace.input_ids.shape[0] != 1:  # a padded batch: the attention page reads one text
        return
    query, key = telling_cell(trace, layer, head)
    said = looks_at(trace.tokens, query, key)
    why_button(st, f"{said[0].upper()}{said[1:]} Take that score apart ▶", layer, head,
               query, key, "wk_why_score", help="Opens the Attention page on this head with "
               "this one score split into word, place and what earlier layers wrote.")
