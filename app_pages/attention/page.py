"""The attention explorer: one head in detail, every head at a glance, lines, and Q·K."""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis.head_stats import head_statistics
from analysis.qk import qk_breakdown
from analysis.rollout import attention_rollout, drop_special, head_average
from model.attention import allowed_keys, layer_window
from ui import class_follow, projector
from ui.alphabet import read_text, show_unknown_note_read
from ui.cache import shared
from ui.charts import chart_config
from ui.callbacks import pick_head
from ui.text import md_escape
from ui.page_registry import page_link
from ui.reference import check_numbers
from ui.sidebar import require_trace, trace_notes
from ui.view_state import page_view
from ui.widgets import index_slider, shown_model_name
from viz.attention import (
    TICK_LABEL_LIMIT, attention_heatmap, cross_attention_heatmap, head_overview, qk_figure,
)
from viz.export import matrix_csv, trace_npz
from viz.heatmap_fit import whole_labels
from viz.labels import axis_labels, plain_text
from viz.lines import LINES_PER_QUERY, MIN_WEIGHT, line_data

from .window import label_note, window_control
from .score_parts import place_grid_figure, show_score_parts
from .score_parts import score_parts_figure as show_score_parts_figure
from .token_lines import BOX_PX, ROW_PX, token_lines


VIEW = page_view("attention")  # this page's settings (teaching/pages.py declares them)
CLEAR_SHARE = 0.3  # a head this much on the previous token shows a clear line on any length
VIEWS = list(VIEW.spec.by_name["view"].choices)
MODES = list(VIEW.spec.by_name["mode"].choices)
ROLLOUT_DEFINITION = (
    "**Attention rollout** (Abnar & Zuidema, 2020) follows attention through the layers. "
    "For each layer, average the heads and add the residual connection: "
    "$\\tilde A_l = \\tfrac12 A_l + \\tfrac12 I$, rows renormalised to sum to 1. "
    "Then multiply the layers: $R_l = \\tilde A_l \\, R_{l-1}$ with $R_0 = \\tilde A_0$. "
    "Row $i$ of $R_l$ estimates how much each input token contributes to token $i$ after "
    "layer $l$."
)


@shared("rollout")
def _rollout(_trace, key: tuple) -> np.ndarray:
    return attention_rollout(_trace.attentions.numpy())


# Shared, not copied: the figure is never mutated, and unpickling a copy on every rerun would
# rebuild (and re-validate) it each time.
@shared("overview")
def _overview(_trace, key: tuple):
    with st.spinner("Drawing every head…"):
        return head_overview(_trace.attentions.numpy())


def _cross_attention(trace, cross, head: int) -> None:
    """The decoder's view of the source: one more heatmap for encoder-decoder models."""
    dec = trace.dec_cfg
    st.subheader("Cross-attention: each output step looks at the source")
    st.caption("The heatmap above is the encoder's self-attention over your text. Here rows are "
               "the decoder's steps (reading the token before, writing the next), columns are "
               f"the source tokens. The model wrote: “{md_escape(trace.outputs[0])}”.")
    cols = st.columns(2)
    VIEW.setdefault("cross_layer", dec.n_layers - 1)  # the last: sharpest
    VIEW.setdefault("cross_head")
    d_layer = index_slider(cols[0], "Decoder layer", dec.n_layers, key=VIEW.key("cross_layer"))
    d_head = index_slider(cols[1], "Decoder head", dec.n_heads, key=VIEW.key("cross_head"))
    st.plotly_chart(cross_attention_heatmap(
        cross[d_layer, d_head], trace.decoder_tokens[0], trace.output_tokens[0], trace.tokens,
        title=f"Cross-attention, decoder layer {d_layer}, head {d_head}"),
        key="attn_cross", config=chart_config("cross-attention", layer=d_layer, head=d_head),
        width="content")


def _opening_head(trace) -> tuple[int, int, float] | None:
    """For a long text, the head to open on: the one that looks most at the previous token
    (a bright line beside the diagonal, visible at any length), with its share; None for a
    short text, or when no head looks back clearly (then layer 0, head 0 as usual)."""
    if trace.n_tokens <= TICK_LABEL_LIMIT:
        return None
    previous = head_statistics(trace.attentions, trace.tokens, trace.special_mask[0])["previous"]
    layer, head = np.unravel_index(int(np.nanargmax(previous)), previous.shape)
    share = float(previous[layer, head])
    return (int(layer), int(head), share) if share >= CLEAR_SHARE else None


def _opening_note(key: tuple, layer: int, head: int, one_head: bool) -> None:
    """Under a long text's map, while it shows the head it opened on: why that head."""
    opened = st.session_state.get("_attn_opened")
    if one_head and opened and opened[0] == key and opened[1:3] == (layer, head):
        st.caption(f"This text is long, so the map opened on layer {layer}, head {head}: of "
                   "all heads it looks most at the token just before ("
                   f"{opened[3]:.0%} of each row on average), the bright line beside the "
                   "diagonal.")


def _chosen_matrix(trace, key: tuple, layer: int, head: int, mode: str, average: bool):
    """The matrix the map shows, and its title."""
    if mode == "Attention rollout":
        return _rollout(trace, key)[layer], f"Attention rollout through layer {layer}"
    if average:
        return (head_average(trace.attentions, layer),
                f"Layer {layer}, average of {trace.cfg.n_heads} heads")
    return trace.attentions[layer, head].numpy(), f"Layer {layer}, head {head}"


def _masks_note(cfg, layer: int, mode: str, n: int):
    """Say what the grey cells are; the sliding-window mask [q_pos, k_pos] (or None)."""
    if cfg.causal:
        st.caption("Causal model: a token may only attend to itself and earlier tokens, so the "
                   "upper triangle (keys after the query) is left out and shown grey. "
                   "Convention: rows = queries, columns = keys. (Some books and papers draw it "
                   "the other way round, with keys as rows.)")
    window = layer_window(cfg, layer)
    if window is None or mode != "Raw attention":
        return None
    if cfg.causal:
        st.caption(f"Layer {layer} looks through a sliding window: each token sees only itself "
                   f"and the {window - 1} tokens before it. Keys further back are masked and "
                   "shown grey too.")
    else:
        st.caption(f"Layer {layer} looks through a sliding window: each token sees only itself "
                   f"and the {window - 1} tokens on either side of it. Keys further away are "
                   "masked and shown grey.")
    return ~allowed_keys(n, cfg.causal, window).numpy()


def _controls(trace, slots) -> tuple[int, int, str, bool, bool]:
    """The layer and head sliders, the mode, and the switches, in four `slots` (columns, or
    the projector's fold-away box): (layer, head, mode, average, hide_special)."""
    cfg = trace.cfg
    layer = index_slider(slots[0], "Layer", cfg.n_layers, key=VIEW.key("layer"))
    mode = slots[2].radio("Show", MODES, key=VIEW.key("mode"),
                          help="Raw: what one head of this layer looks at. Rollout: follows "
                          "attention down through every layer so far, to estimate how much "
                          "each input token ends up in each token's vector.")
    average = slots[3].toggle("Average of heads", key=VIEW.key("average"),
                              disabled=mode != "Raw attention")
    head = index_slider(slots[1], "Head", cfg.n_heads, key=VIEW.key("head"),
                        disabled=average or mode != "Raw attention")
    # Only offered when this run has special tokens (tiny-chars has none: nothing to hide).
    hide_special = bool(trace.special_mask[0].any()) and slots[3].toggle(
        "Hide special tokens", key=VIEW.key("hide_special"),
        help="Drop the special tokens, then renormalise each row to sum to 1. Special tokens "
        "are the markers the model knows by their id: [CLS], [SEP], BOS, padding, also when "
        "typed in the text itself.")
    return layer, head, mode, average, hide_special


def _places(room: bool):
    """Where the explorer draws: (four slots for the controls, the box for the window's
    slider, the map's place, the notes' place). Normal mode: the controls in a row, the notes,
    then the map. Projector mode (the screen a room watches): the page's title beside a button
    that opens the controls, then the map, then the notes, so the map is in the first screen."""
    if not room:
        slots = st.columns([3, 3, 2, 2])
        window_box, notes, figure_box = st.container(), st.container(), st.container()
        return slots, window_box, figure_box, notes
    row = st.container(horizontal=True, vertical_alignment="center", key="attn_room_title")
    row.title("Attention", anchor=False)
    box = row.popover("Layer, head and view", icon=":material/tune:", key="attn_room_controls",
                      help="The sliders and switches that choose what the map shows.")
    slots = [box.container() for _ in range(4)]
    figure_box, notes = st.container(), st.container()
    return slots, box, figure_box, notes


@st.fragment
def explorer(selection) -> None:
    """Sliders, the heatmap and the detail view. A fragment: moving a slider reruns only this,
    not the sidebar and the rest of the page. Streamlit keeps a fragment's arguments for its
    reruns, so it gets the selection (names), never the trace: the trace comes from the shared
    budget each time, recomputed if it was evicted. A fragment's rerun does not pass app.py's
    run queue, so that recomputation waits its turn there itself, with its place in line shown
    at the top of the fragment (ui/cache.turn_to_compute)."""
    trace = selection.trace
    if trace is None:
        return
    key = (selection.model_name, selection.text, selection.pair)
    cfg, tokens, labels = trace.cfg, trace.tokens, axis_labels(trace.tokens)
    room = projector.on()
    slots, window_box, figure_box, notes = _places(room)
    if room:  # what the page says about the map, under it (render() says it above otherwise)
        with notes:
            trace_notes(selection, trace)
            _about(selection, trace)
    layer, head, mode, average, hide_special = _controls(trace, slots)
    with notes:  # the page's width is measured there; the window's slider goes with the controls
        window = window_control(window_box, len(tokens), labels, VIEW.key("window"))
    matrix, title = _chosen_matrix(trace, key, layer, head, mode, average)

    shown = list(range(len(tokens)))
    with notes:
        if hide_special:
            keep = ~trace.special_mask[0].bool().numpy()
            matrix, shown = drop_special(matrix, keep)
            hidden = [tokens[i] for i in range(len(tokens)) if not keep[i]]
            st.info(f"Hiding {len(hidden)} special tokens; each row was renormalised to sum to "
                    "1, so these are shares of the attention that went to ordinary tokens.")
        outside = _masks_note(cfg, layer, mode, len(tokens))
    inside = [j for j, i in enumerate(shown) if window.keeps(i)]  # rows/columns of `matrix`
    in_window = [shown[j] for j in inside]  # their positions in the text
    matrix = matrix[np.ix_(inside, inside)]
    shown_labels = [labels[i] for i in in_window]
    hover = [whole[i] for i in in_window] if (whole := whole_labels(tokens)) != labels else None
    if outside is not None:
        outside = outside[np.ix_(in_window, in_window)]
    if mode == "Attention rollout":
        notes.markdown(ROLLOUT_DEFINITION)

    fig = attention_heatmap(matrix, shown_labels, shown_labels, title=title,
                            causal=cfg.causal and mode == "Raw attention", masked=outside,
                            max_width=window.column,
                            tick_every=(window.fit.x_step, window.fit.y_step),
                            hover_labels=hover and (hover, hover))
    if len(tokens) > TICK_LABEL_LIMIT:
        with notes:
            _opening_note(key, layer, head, mode == "Raw attention" and not average)
    figure_box.plotly_chart(fig, key="attn_heatmap",
                            config=chart_config("attention", fig, title), width="content")
    if label_note(window):
        st.caption(label_note(window))
    if trace.kind == "encoder_decoder":  # tiny-reverse: the decoder reads the source too
        _cross_attention(trace, trace.cross_attentions, head)

    view = st.segmented_control("More", VIEWS, key=VIEW.key("view"),
                                label_visibility="collapsed") or VIEWS[0]
    VIEW.write_link()
    if view != st.session_state.get("_attn_view_drawn"):
        st.rerun()  # the overview is drawn outside this fragment: redraw the whole page

    # "All heads" is drawn below, outside the fragment: it does not change with the sliders.
    _detail_view(view, selection, trace, layer, head, matrix, shown_labels)
    class_follow.after_fragment()  # in a live class: the teacher's view, a student's move


def _detail_view(view: str, selection, trace, layer: int, head: int, matrix,
                 shown_labels: list[str]) -> None:
    """The view chosen under the heatmap: token lines, Q·K, or downloads."""
    cfg, tokens = trace.cfg, trace.tokens
    labels = axis_labels(tokens)
    if view == "Token lines":
        heads = st.multiselect("Heads", list(range(cfg.n_heads)), default=[head],
                               key="attn_line_heads")
        token_lines(line_data(trace.attentions[layer].numpy(), labels, heads), "attn_lines")
        st.caption(f"Layer {layer}: each line joins a token on the left (the query) to a token "
                   "it looks at on the right (the key); the stronger the weight, the darker the "
                   "line, and each head has its colour. Hover a token to see only its lines; "
                   "click it to keep them. "
                   + (f"The {len(tokens)} tokens scroll inside the box. "
                      if len(tokens) > BOX_PX // ROW_PX else "")
                   + f"Lines below {MIN_WEIGHT:.0%} are left out, and a token draws at most "
                   f"its {LINES_PER_QUERY} strongest per head.")

    elif view == "Where a row comes from (Q·K)" and trace.kind == "foreign":
        st.info("This view needs each head's queries and keys, and Hugging Face's own code "
                "gives only the attention weights: it works for a model family this app knows.")
    elif view == "Where a row comes from (Q·K)":
        query = st.selectbox("Query token", list(range(len(tokens))), key="attn_query",
                             format_func=lambda i: plain_text(labels[i]))
        breakdown = qk_breakdown(trace, layer, head, query)
        st.plotly_chart(qk_figure(breakdown, labels), key="attn_qk",
                        config=chart_config("qk", layer=layer, head=head, query=query))
        scaled = (f"divided by √d_head = √{cfg.d_head}" if cfg.attn_scale is None else
                  f"multiplied by this model's own scale, {cfg.attn_scale:.4g}")
        capped = "" if cfg.attn_softcap is None else \
            f", squashed into (−{cfg.attn_softcap:g}, {cfg.attn_softcap:g})"
        st.caption(f"Head {head} of layer {layer}: the query vector of the chosen token is "
                   f"dotted with every key vector (q·k), {scaled}{capped}, masked where "
                   "needed, and the softmax of that row gives the heatmap row above.")

    elif view == "Why this score":
        show_score_parts(selection, trace, layer, head)
    elif view == "Download":  # "All heads" is drawn by the page, outside the fragment
        st.download_button("Attention matrix (CSV)", matrix_csv(matrix, shown_labels, shown_labels),
                           file_name=f"attention_L{layer}_H{head}.csv", mime="text/csv",
                           key="attn_csv")
        st.download_button("Whole trace (NPZ)", lambda: trace_npz(selection.trace),
                           file_name="trace.npz",
                           mime="application/octet-stream", key="attn_npz")
        st.caption("Every figure also saves an image from its toolbar (camera icon): PNG or SVG, "
                   "as chosen under “Figure downloads” in the sidebar.")


def _about(selection, trace) -> None:
    """What the map shows, in one caption; what the model read; where its effect is."""
    cfg = trace.cfg
    st.caption(
        f"{shown_model_name(selection.model_name)}: {cfg.n_layers} layers × {cfg.n_heads} "
        f"heads, {trace.n_tokens} token{'s' * (trace.n_tokens != 1)}. Rows are queries (the "
        "token doing the looking), "
        "columns are keys (the tokens looked at); a row's weights are shares of one token's "
        "attention and add up to 1.", help=f"Inside the model each token is a list of "
        f"{cfg.d_model} numbers (d_model); each head works on {cfg.d_head} of them (d_head). "
        "The weights of a row come from a softmax over the keys."
    )
    show_unknown_note_read(selection, read_text(selection.text, trace))  # what it read
    if trace.kind == "foreign":  # Hugging Face's own code: attention only (model/foreign.py)
        st.info(md_escape(selection.model.pages_note))
    else:  # the effect page needs the engine's own code
        page_link(st, "effect", label="Does attention explain the answer? See its effect ▸",
                  icon="", help="A head can look hard at a token and pass on very little "
                  "of it: this page puts attention beside what really changes the model's "
                  "answer.")


def render(selection) -> None:
    """The page body: its run (trace, figures) lives in locals that end with the run; the
    fragment above gets what it needs as arguments. In projector mode the explorer draws the
    title, and what the page says about the map comes under the map (see `_places`)."""
    room = projector.on()
    if not room:
        st.title("Attention", anchor=False)
    trace = require_trace(selection, notes=not room)
    cfg = trace.cfg
    key = (selection.model_name, selection.text, selection.pair)
    if not room:
        _about(selection, trace)
    opening = None  # a long text opens on a head with a clear pattern, unless a link names one
    if VIEW.given("layer") is None and VIEW.given("head") is None:
        opening = _opening_head(trace)
        if opening:
            st.session_state["_attn_opened"] = (key, *opening)
    VIEW.setdefault("layer", opening[0] if opening else 0)
    VIEW.setdefault("head", opening[1] if opening else 0)
    for name in ("mode", "average", "hide_special", "window", "cell_query", "cell_key",
                 "cell_in"):
        VIEW.setdefault(name)
    st.session_state["_attn_view_drawn"] = VIEW.setdefault("view") or VIEWS[0]
    explorer(selection)
    if st.session_state["_attn_view_drawn"] == "All heads":
        st.caption("Every layer × head at once, each downsampled to a thumbnail. Click a cell to "
                   "open that head above.")
        st.plotly_chart(_overview(trace, key), key="attn_overview",
                        on_select=pick_head("attn_overview", cfg.n_heads),
                        selection_mode="points", config=chart_config("all-heads"),
                        width="content")
    check_numbers(selection, "attn")



# Shared, not copied: every session showing this view (a class following its teacher) draws
# the one figure, built once per server; it is never mutated (ui/cache.shared).
@shared("attention_step_heatmap")
def _step_heatmap(_trace, key: tuple, layer: int, head: int, mode, average: bool,
                  hide_special: bool):
    """(the heatmap of a lesson step's head, or of its mode, and its title)"""
    labels = axis_labels(_trace.tokens)
    if mode == "Attention rollout":
        matrix, title = _rollout(_trace, key)[layer], f"Rollout through layer {layer}"
    elif average:
        matrix = head_average(_trace.attentions, layer)
        title = f"Layer {layer}, average of {_trace.cfg.n_heads} heads"
    else:
        matrix, title = _trace.attentions[layer, head].numpy(), f"Layer {layer}, head {head}"
    if hide_special and bool(_trace.special_mask[0].any()):
        keep = ~_trace.special_mask[0].bool().numpy()
        matrix, shown = drop_special(matrix, keep)
        labels, title = [labels[i] for i in shown], f"{title}, special tokens hidden"
    fig = attention_heatmap(matrix, labels, labels, title=title,
                            causal=_trace.cfg.causal and mode != "Attention rollout")
    return fig, title


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py), in the step's view: the heatmap of its
    head (or of its mode: average, rollout), the decoder's cross-attention, the step's cell
    taken apart, or every head coloured by how positional it is; no controls."""
    trace = require_trace(selection)
    if name == "score-parts":
        show_score_parts_figure(selection, trace, VIEW.setdefault("layer", 0),
                                VIEW.setdefault("head", 0))
        return
    if name == "place-grid":
        place_grid_figure(selection, trace)
        return
    if name == "cross-attention" and trace.kind == "encoder_decoder":
        layer, head = VIEW.setdefault("cross_layer", trace.dec_cfg.n_layers - 1), \
            VIEW.setdefault("cross_head")
        st.plotly_chart(cross_attention_heatmap(
            trace.cross_attentions[layer, head], trace.decoder_tokens[0], trace.output_tokens[0],
            trace.tokens, title=f"Cross-attention, decoder layer {layer}, head {head}"),
            key="attn_cross", config=chart_config("cross-attention", layer=layer, head=head))
        return
    view = (VIEW.setdefault("layer", 0), VIEW.setdefault("head", 0), VIEW.setdefault("mode"),
            bool(VIEW.setdefault("average")), bool(VIEW.setdefault("hide_special")))
    fig, title = _step_heatmap(trace, (selection.model_name, selection.text, selection.pair),
                               *view)
    st.plotly_chart(fig, key="attn_heatmap", config=chart_config("attention", fig, title),
                    width="content")
