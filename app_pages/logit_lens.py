"""Logit lens: what the residual stream would predict if the model stopped after each layer."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.logit_lens import Lens, logit_lens
from ui import projector
from ui.alphabet import read_text, show_unknown_note_read
from ui.cache import get_model, shared
from ui.charts import chart_config
from ui.column_width import column_width
from ui.examples import LEARNED_FROM, known_label, known_sentence
from ui.sidebar import require_trace, use_known_sentence
from ui.switch import needs_lm_head, offer_decoder, open_on_decoder, opened_note
from ui.text import md_escape
from ui.view_state import page_view
from viz.labels import SEPARATOR, axis_labels, looks_byte_level, visible_text, plain_text
from viz.lens import (CELL_TEXT_LIMIT, LENS_SIDES_PX, NARROW_PLOT_PX, detail_columns,
                      labelled_width, lens_table)
from viz.style import ROOM_SCALE

VIEW = page_view("logit-lens")  # this page's settings (teaching/pages.py declares them)
TOP_K = 5
DEFAULT_WIDTH = 12  # positions shown at first


def lens_plot_px(column_px: int | None, room: bool) -> float:
    """How wide the lens table's plot is in a column the browser measured `column_px` wide
    (None: not yet, the narrowest page), in px at the normal font: projector mode draws its
    labels, cell text and margins ROOM_SCALE times larger, as on a page that much narrower."""
    if column_px is None:
        return NARROW_PLOT_PX
    scale = ROOM_SCALE if room else 1.0
    return max(NARROW_PLOT_PX, (column_px - LENS_SIDES_PX * scale) / scale)


def _keep_residual(name: str) -> bool:
    return name.endswith(("hook_resid_pre", "hook_resid_post"))


@shared("logit_lens")
def _lens(_trace, key: tuple) -> Lens:
    try:
        hidden = _trace.hidden_states  # [n_layers + 1, pos, d_model]
    except KeyError:  # a trace without the residual stream: run again keeping just that
        model_name, text, pair = key
        hidden = get_model(model_name).run(text, pair or None, keep=_keep_residual).hidden_states
    model = get_model(key[0]).model
    return logit_lens(model, hidden, _trace.token_ids, k=TOP_K)


def _thinned_note(fig, n_pos: int) -> None:
    """When the column labels (each position's token and the true next token) would overlap,
    the table labels every step-th column: say which, and where the others are."""
    ticks = list(fig.layout.xaxis.tickvals or [])
    if not fig.layout.xaxis.showticklabels or len(ticks) >= n_pos or len(ticks) < 2:
        return
    step = list(fig.data[0].x).index(ticks[1])
    st.caption(f"So that labels do not overlap, one column in every {step} is labelled (positions "
               f"{ticks[0].split(SEPARATOR)[0]}, {ticks[1].split(SEPARATOR)[0]}, …); narrow the "
               "positions to label each one, or hover a cell for its true next token.")


def _guesses_note(lens: Lens, n: int, model_name: str) -> None:
    """When the model's own output (the last row) misses most of the text's next tokens, say
    so with the count from the run: the rows above then show a wrong guess forming. For a
    model trained on narrow text, say what it learned from and offer a sentence it knows."""
    right = int((lens.next_rank[-1, :n - 1] == 1).sum())
    if n < 2 or 2 * right >= n - 1:
        return
    st.caption(f"The model's own guess (the last row) is the text's real next token at {right} "
               f"of {n - 1} positions, so most columns show a wrong guess forming. "
               + LEARNED_FROM.get(model_name, "").replace(model_name, "This model", 1))
    sentence = known_sentence(model_name)
    if sentence and st.session_state.get("sb_text") != sentence:
        st.button(known_label(model_name), key="lens_known_text", on_click=use_known_sentence,
                  args=(model_name,))


def _one_position(selection, trace, lens, labels: list, end: int) -> None:
    """One position: what every layer ranks there, and the true next token."""
    tokens = trace.tokens
    n = len(tokens)
    st.subheader("One position in detail")
    if VIEW.setdefault("pos", min(max(end, 0), n - 1)) not in range(n):
        VIEW["pos"] = min(max(end, 0), n - 1)
    pos = st.select_slider("Position", list(range(n)), key=VIEW.key("pos"),
                           format_func=lambda i: plain_text(labels[i])) if n > 1 else 0
    byte_level = looks_byte_level(tokens)
    words = get_model(selection.model_name).tokenizer.tokens(lens.top_ids[:, pos].reshape(-1)
                                                             .tolist())
    truth = visible_text(tokens[pos + 1], byte_level) if pos + 1 < n else None
    st.caption(f"Reading position {pos} (“{md_escape(visible_text(tokens[pos], byte_level))}”). "
               + (f"The true next token is “{md_escape(truth)}”: rank 1 means the layer already "
                  "puts it first." if truth is not None else
                  ("This is the last token the model read (the rest of the text was cut), so "
                   "there is nothing to rank it against."
                   if trace.dropped[0] or selection.cut_chars else
                   "This is the last token, so there is no true next token to rank.")))
    ranked = [[visible_text(words[r * TOP_K + i], byte_level) for i in range(TOP_K)]
              for r in range(lens.n_rows)]
    columns = (detail_columns(lens.row_names, ranked, lens.top_probs[:, pos])
               if truth is None else
               detail_columns(lens.row_names, ranked, lens.top_probs[:, pos],
                              lens.next_rank[:, pos], lens.next_prob[:, pos]))
    # A static table: its cells wrap, so it fits a narrow screen with no sideways scroll. Its
    # cells are Markdown, so every token is escaped.
    st.table(pd.DataFrame({name: [md_escape(c) for c in cells] for name, cells in columns.items()}),
             hide_index=True)
    st.caption("Each cell: the token the layer ranks there and its probability."
               + (" True next: the rank and probability the layer gives the token that really "
                  "comes next." if truth is not None else ""))


def _table(selection, trace, lens: Lens, window: tuple[int, int], colour: str, plot_px: float):
    """The lens table over positions `window` (first, last), drawn; returns its figure."""
    start, end = window
    tokens, n = trace.tokens, len(trace.tokens)
    span = range(start, end + 1)
    ids = lens.top_ids[:, start:end + 1]  # [row, span, k]
    flat = get_model(selection.model_name).tokenizer.tokens(ids.reshape(-1).tolist())
    top_tokens = [[flat[(r * len(span) + p) * TOP_K:(r * len(span) + p + 1) * TOP_K]
                   for p in range(len(span))] for r in range(lens.n_rows)]
    next_tokens = [tokens[p + 1] if p + 1 < n else "" for p in span]
    fig = lens_table(lens.row_names, [tokens[p] for p in span], top_tokens,
                     lens.top_probs[:, start:end + 1], next_tokens,
                     lens.next_rank[:, start:end + 1],
                     lens.next_prob[:, start:end + 1], colour=colour,
                     title=f"Top token after each layer, positions {start}–{end}",
                     first_position=start, plot_px=plot_px)
    st.plotly_chart(fig, key="lens_table",
                    config=chart_config("logit-lens", fig, positions=f"{start}-{end}"))
    return fig


def render(selection) -> None:
    st.title("Logit lens", anchor=False)
    trace = require_trace(selection)
    reason = needs_lm_head(selection, "The logit lens")
    if reason is not None:
        open_on_decoder(selection, reason, key="lens_switch")
        st.stop()
    opened_note(selection, key="lens_switch")

    key = (selection.model_name, selection.text, selection.pair)
    tokens = trace.tokens
    n = len(tokens)
    labels = axis_labels(tokens)
    lens = _lens(trace, key)
    st.caption(
        "After every layer, the running sum that carries each token through the model is read "
        "out the same way the model reads its last layer, as if it stopped there: turned into a "
        "probability for every token it knows. That shows which next token it leans to at that "
        "depth. The last row is exactly the model's real output. Read each column top-down to "
        "watch a prediction form.",
        help="For the curious: each row is the residual stream after that layer, passed through "
        "the model's own final norm and unembedding, then a softmax over the vocabulary.")

    show_unknown_note_read(selection, read_text(selection.text, trace))  # what it read
    plot_px = lens_plot_px(column_width("lens_column_width"), projector.on())
    window = st.session_state.get("lens_window")
    if not (isinstance(window, tuple) and 0 <= window[0] <= window[1] < n) \
            or window == st.session_state.get("_lens_auto"):  # not moved: follows the screen
        width = labelled_width(tokens, 0, DEFAULT_WIDTH, plot_px)  # every label readable
        st.session_state["lens_window"] = st.session_state["_lens_auto"] = (0, width - 1)
    cols = st.columns([4, 2])
    if n > 1:
        start, end = cols[0].slider("Positions", 0, n - 1, key="lens_window",
                                    help=f"Up to {CELL_TEXT_LIMIT} positions show their top token "
                                    "in the cell; wider windows show colours only (hover for "
                                    "details).")
    else:
        start, end = 0, 0
        cols[0].caption("One token: a single column.")
    colour = cols[1].radio("Colour by", ["top", "next"], key="lens_colour", horizontal=True,
                           format_func={"top": "p(top token)", "next": "p(true next token)"}.get)

    fig = _table(selection, trace, lens, (start, end), colour, plot_px)
    _thinned_note(fig, end - start + 1)
    _guesses_note(lens, n, selection.model_name)

    _one_position(selection, trace, lens, labels, end)


def _window_ending(tokens, end: int, plot_px: float) -> int:
    """The first position of the widest window (at most DEFAULT_WIDTH positions) that ends at
    `end` with every column labelled."""
    start = end
    while start > 0 and end - start + 1 < DEFAULT_WIDTH \
            and labelled_width(tokens, start - 1, end - start + 2, plot_px) == end - start + 2:
        start -= 1
    return start


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py): the lens table over the positions up
    to the step's position (the last one unless the step names another), every layer's top
    guess in its cells."""
    trace = require_trace(selection)
    reason = needs_lm_head(selection, "The logit lens")
    if reason is not None:
        offer_decoder(selection, reason, key="lens_switch")
        return
    n = len(trace.tokens)
    given = VIEW.given("pos")  # the step's position; else the last, not kept as the step's
    end = given if given in range(n) else n - 1
    plot_px = lens_plot_px(column_width("lens_column_width"), projector.on())
    lens = _lens(trace, (selection.model_name, selection.text, selection.pair))
    _table(selection, trace, lens, (_window_ending(trace.tokens, end, plot_px), end), "top",
           plot_px)
