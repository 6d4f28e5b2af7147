"""The classroom walkthrough: the user's own text through every step of the forward pass,
with the real shapes and the first values of every tensor, for an encoder or a decoder."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from model import Trace
from analysis.walkthrough import Shown, Step, keep, preview, top_tokens, walkthrough
from analysis.walkthrough.mlp import ActivationView, activation_view
from analysis.walkthrough.steps import dim_words, plural, where_from
from analysis.walkthrough.table import (
    FULL_PX, PAIR_PX, cell_texts, decimals_for, display_values, fitting_columns,
)
from analysis.cost import full_run_plan
from ui import projector
from ui.cache import get_model, shared
from ui.heavy import room_for
from ui.sidebar import require_trace
from ui.decoder_lab import decoder_reason
from ui.page_registry import page_link
from ui.score_links import why_from_scores_step
from ui.view_state import page_view
from viz.attention import attention_heatmap
from ui.callbacks import step_state
from ui.charts import chart_config
from ui.widgets import index_slider
from viz.labels import axis_labels, plain_text, visible_text
from viz.numbers import percent
from viz.style import HALF_PAGE_PX
from viz.walkthrough import (
    activation_scatter, allowed_matrix, layer_stack_heatmap, mask_matrix, open_on_start,
    scores_heatmap, top_tokens_bar, values_heatmap,
)

from .tokens import column_formats, show_tokens

PREVIEW_ROWS, PREVIEW_COLS = 6, 8
POS_DIMS = ("pos", "q_pos", "k_pos")
SIDE_BY_SIDE_TOKENS = 40  # two figures share a row up to this many tokens, else stack
SQUARE = ("allowed", "scores", "mask", "pattern")  # [q_pos, k_pos] figures
EVERYTHING = 10**9  # preview() with this many rows and columns returns the whole 2-D slice
PAIR_VS_BATCH = (
    "**Sentence pair** (the default): one sequence `[CLS] A [SEP] B [SEP]`, with token type 0 "
    "for the first sentence and 1 for the second; this is how BERT reads a question with its "
    "answer. **Padded batch of two**: two separate texts in one batch, as a model reads "
    "several at once. "
    "The shorter one is filled with padding so both fit one `[2, pos]` tensor, and the "
    "attention mask hides the padding from every query."
)

# A model without token types has no sentence pairs: a second text only makes a batch.
BATCH_ONLY = ("Your two texts run as a padded batch of two: the shorter one is filled with "
              "padding so both have the same length, and the attention mask hides the padding "
              "from every query.")

VIEW = page_view("walkthrough")


def _reads_two_texts(model) -> bool:
    """Can the sidebar's second text be used with this model? (A character model reads one
    text at a time: a second one is refused.)"""
    try:
        model.encode("a", "b")
    except ValueError:
        return False
    return True


def _where_next(predicts_next: bool) -> None:
    """Links from the last step to the pages that apply to this model: the logit lens and
    generation only for a model that predicts the next token (ui/decoder_lab.py decides, as
    those pages do)."""
    if predicts_next:
        st.markdown("**Where to go next:** see what every head attends to, watch the guess "
                    "for the next token form layer by layer, or let the model write.")
        pages = ("attention", "logit-lens", "generate")
    else:
        st.markdown("**Where to go next:** see what every head attends to, which heads share "
                    "a habit, and where the token vectors sit.")
        pages = ("attention", "heads", "embeddings")
    links = st.container(horizontal=True, gap="medium")
    for path in pages:
        page_link(links, path)


@shared("walkthrough_run")
def _full_trace(name: str, text: str, pair: str, as_batch: bool) -> Trace:
    """Every hook kept but q·k and the scores (the walkthrough derives the layer it shows), in
    the app's shared memory budget; its memory is reserved first."""
    model = get_model(name)
    texts, pairs = ([text, pair], None) if as_batch else (text, pair or None)
    batch, n_pos = model.encode(texts, pairs).input_ids.shape
    with room_for(full_run_plan(model.cfg, n_pos, batch)), st.spinner("Running the model…"):
        return model.run(texts, pairs, keep=keep)


def _init_state() -> None:
    """Session defaults, taken from the link the first time (step is 1-based, as shown)."""
    for name in ("step", "layer", "head", "teacher"):
        VIEW.setdefault(name)


def _clamp(key: str, low: int, high: int) -> None:
    st.session_state[key] = min(max(int(st.session_state.get(key, low)), low), high)


def _axis(dim: str, n: int, labels: list[str], n_layers: int, vocab=None) -> list[str]:
    if dim in POS_DIMS:
        return [plain_text(label) for label in labels[:n]]
    if dim == "layer":
        return (["embeddings"] + [f"after layer {i}" for i in range(n_layers)])[:n]
    if dim == "batch":
        return [f"text {i + 1}" for i in range(n)]
    if dim == "vocab" and vocab is not None:  # a logit column is a token: "the (id 1996)"
        return [f"{visible_text(t)} (id {i})" for i, t in enumerate(vocab(list(range(n))))]
    return [str(i) for i in range(n)]


def _show_tensor(shown: Shown, pick: dict, labels: list[str], n_layers: int,
                 vocab=None, budget_px: float = FULL_PX) -> None:
    """The tensor's name and shape, where it is read, and a preview of its first rows and of
    as many of its first columns as fit `budget_px` (the caption counts exactly those)."""
    st.markdown(f"**{shown.label}** · shape `{list(shown.shape)}`: "
                + " × ".join(dim_words(d) for d in shown.dims))
    st.caption(where_from(shown))
    pv = preview(shown, pick, PREVIEW_ROWS, PREVIEW_COLS)
    rows, cols = pv.values.shape
    index = _axis(pv.row_dim, rows, labels, n_layers, vocab)
    headers = _axis(pv.col_dim, cols, labels, n_layers, vocab)
    decimals = decimals_for(pv.values)  # one for the whole table: a column reads as one
    texts = _percentages(pv.values) if shown.probability else cell_texts(pv.values, decimals)
    cols = fitting_columns(index, headers, texts, budget_px)
    frame = pd.DataFrame(texts[:, :cols] if shown.probability
                         else display_values(pv.values[:, :cols], decimals),
                         index=index, columns=headers[:cols])
    st.dataframe(frame, width="stretch", column_config=column_formats(frame, decimals))
    fixed = ", ".join(_fixed_words(dim, i, labels, n_layers) for dim, i in pv.fixed.items())
    st.caption(f"Preview: {_count(rows, pv.n_rows, pv.row_dim)} (rows) × "
               f"{_count(cols, pv.n_cols, pv.col_dim)} (columns)"
               + (f", for {fixed}" if fixed else "") + ".")


def _percentages(values: np.ndarray) -> np.ndarray:
    """Probabilities as the app writes them everywhere: "61%", "0.07%", "< 0.01%"."""
    return np.array([percent(v) for v in values.ravel()], dtype=object).reshape(values.shape)


def _count(shown: int, total: int, dim: str) -> str:
    """"the first 6 of 13 positions", "all 13 positions", "1 text"."""
    if total == 1:
        return f"1 {dim_words(dim, one=True)}"
    return (f"all {total}" if shown == total else f"the first {shown} of {total}") + \
        f" {dim_words(dim)}"


def _fixed_words(dim: str, i: int, labels: list[str], n_layers: int) -> str:
    """A held dimension in plain words: "text 1", "head 0", "layer 2 (after layer 1)"."""
    if dim == "batch":
        return f"text {i + 1}"
    if dim == "layer":
        return f"{_axis(dim, i + 1, labels, n_layers)[i]}"
    return f"{dim_words(dim, one=True)} {i}"


def _curious(step: Step) -> None:
    """The exact names behind the step's tensors, for whoever wants to find them in the code."""
    with st.expander("For the curious: where these numbers are read in the code"):
        st.markdown("\n".join(
            f"- **{s.label}**: " + ("" if s.source.startswith("trace.") else "hook ")
            + f"`{s.source}`" + (f", then {s.how}" if s.how else "")
            + f"; dimensions `[{', '.join(s.dims)}]`" for s in step.shown))


def _outside_words(view: ActivationView, name: str) -> str:
    """What the activation plot shows and leaves out, in numbers from the run."""
    w = f"{view.window:g}"
    line = (f"The grey line is {name} itself; each blue dot is one number of this text, and "
            "every dot sits on the line. ")
    if not view.below and not view.above:
        return line + f"All {view.total:,} numbers lie between −{w} and {w}."
    parts = ([f"{view.below:,} below −{w} (down to {view.lowest:.1f})"] if view.below else []) \
        + ([f"{view.above:,} above {w} (up to {view.highest:.1f})"] if view.above else [])
    return (line + f"Of the {view.total:,} numbers, " + " and ".join(parts)
            + " lie outside the plot, which shows where the curve bends.")


def _slice(shown: Shown, pick: dict) -> np.ndarray:
    return preview(shown, pick, EVERYTHING, EVERYTHING).values  # [rows, cols]


def _figure(step: Step, trace: Trace, pick: dict, labels: list[str], model) -> None:
    item, head, cfg = pick["batch"], pick["heads"], trace.cfg
    where = f"text {item + 1}" if trace.input_ids.shape[0] > 1 else ""
    last = step.shown[-1]
    in_head = ", ".join(x for x in (f"layer {step.layer}, head {head}", where) if x)
    fig, fig2, note = None, None, ""
    if step.figure == "tokens":  # a table that scrolls and counts its rows
        show_tokens(trace, bool(cfg.n_token_types))
    elif step.figure == "values" and last.dims[-2] in POS_DIMS:
        title = ", ".join(x for x in (f"{step.title}: {last.label}", where, f"head {head}"
                                      if "heads" in last.dims else "") if x)
        fig = values_heatmap(_slice(last, pick), labels, title, dim_words(last.dims[-1], True))
    elif step.figure == "allowed":
        fig = allowed_matrix(trace.attention_mask[item], labels, causal=cfg.causal,
                             title="Who may attend: both masks" + (f", {where}" if where else ""))
    elif step.figure == "scores":
        fig = scores_heatmap(_slice(last, pick), labels, f"{last.label}, {in_head}")
    elif step.figure == "mask":
        n = len(labels)
        bias = np.broadcast_to(_slice(step.shown[0], pick), (n, n))  # [q_pos, k_pos]
        fig = mask_matrix(bias, labels, "The mask M" + (f", {where}" if where else ""),
                          max_width=HALF_PAGE_PX)
        fig2 = scores_heatmap(_slice(last, pick), labels, f"{last.label}, {in_head}",
                              max_width=HALF_PAGE_PX)
    elif step.figure == "pattern":
        padding = np.broadcast_to(~trace.attention_mask[item].bool().numpy(), (len(labels),) * 2)
        fig = attention_heatmap(_slice(last, pick), labels, labels, causal=cfg.causal,
                                title=f"Attention pattern, layer {step.layer}, head {head}",
                                masked=padding)
    elif step.figure == "activation":
        view = activation_view(*(s.tensor[item] for s in step.shown), cfg.act)
        name = step.title.split(": ")[-1]
        fig = activation_scatter(view.x, view.y, step.title + (f", {where}" if where else ""),
                                 (view.curve_x, view.curve_y), view.window, name)
        note = _outside_words(view, name)
    elif step.figure == "stack":
        fig = layer_stack_heatmap(_slice(last, pick), labels, "The residual stream, layer "
                                  "by layer" + (f", {where}" if where else ""))
    elif step.figure == "top":
        ids, probs = top_tokens(last.tensor[item], 10)
        position = int(trace.attention_mask[item].sum()) - 1
        fig = top_tokens_bar(model.tokenizer.tokens(ids), probs,
                             f"Most likely next tokens after {plain_text(labels[position])}"
                             + (f", {where}" if where else ""))
    fig, fig2 = (None if f is None else open_on_start(f, step.figure) for f in (fig, fig2))
    side_by_side = fig2 is not None and len(labels) <= SIDE_BY_SIDE_TOKENS
    # beside each other where both fit (a wide screen), else one under the other
    columns = (st.container(key="wide_wk_pair").columns(2) if side_by_side
               else [st.container()] * 2)
    for column, figure, key in zip(columns, (fig, fig2), ("wk_fig", "wk_fig2")):
        if figure is not None:  # square matrices are sized to their tokens; the rest stretch
            column.plotly_chart(figure, key=key, config=chart_config("walkthrough", figure),
                                width="content" if step.figure in SQUARE else "stretch")
    if note:
        st.caption(note)


def _run_input(selection):
    """The run to walk through: one text, a sentence pair, or two texts as a padded batch."""
    has_pair = bool(selection.pair.strip())
    has_types = selection.model.cfg.n_token_types > 0  # sentence A / B: only then is a pair
    if has_pair and has_types:
        VIEW.setdefault("batch")
        st.toggle("Run the two texts as a padded batch of two", key=VIEW.key("batch"),
                  help="Off: one sentence-pair sequence. On: two sequences padded to one length.")
        with st.expander("Sentence pair or padded batch?"):
            st.markdown(PAIR_VS_BATCH)
    elif has_pair:
        st.caption(BATCH_ONLY)
    elif has_types:
        st.caption("Type a second sentence in the sidebar to compare a sentence pair with a padded "
                   "batch of two texts (where padding and its mask appear).")
    elif _reads_two_texts(selection.model):
        st.caption("Type a second text in the sidebar to see a padded batch of two texts (where "
                   "padding and its mask appear).")
    as_batch = has_pair and (bool(VIEW.peek("batch")) or not has_types)
    try:
        trace = _full_trace(selection.model_name, selection.text, selection.pair, as_batch)
    except ValueError as exc:  # e.g. a character model given two texts to pad together
        st.error(f"Could not run the walkthrough: {exc}")
        st.stop()
    return trace


def _describe(trace) -> None:
    """What kind of model this is and the shape of this input, in one line."""
    cfg = trace.cfg
    batch, n_pos = trace.input_ids.shape
    kind = "decoder (it writes text, one token after another)" if cfg.causal else \
        "encoder (it reads the whole text at once)"
    family = {"own": "This project's own", "bert": "A BERT-style", "roberta": "A RoBERTa-style",
              "gpt2": "A GPT-2-style", "llama": "A Llama-style", "neox": "A GPT-NeoX (Pythia)",
              "opt": "An OPT", "gpt_neo": "A GPT-Neo", "phi3": "A Phi-3"}.get(cfg.family, "A")
    mlp = f"; the feed-forward part widens them to {cfg.d_mlp}" if cfg.d_mlp else ""
    st.caption(f"{family} {kind}: {plural(cfg.n_layers, 'layer')} of "
               f"{plural(cfg.n_heads, 'head')} each. Each token is a list of {cfg.d_model} "
               f"numbers; each head works on {cfg.d_head} of them{mlp}. This input: "
               f"{plural(batch, 'text')} × {plural(n_pos, 'position')}. Every shape and number "
               "below is read from this run.")
    if any(name.startswith("decoder.") for name in trace.cache):
        st.info("An encoder-decoder: these steps follow its encoder, which reads your text. The "
                "decoder's own layers and its cross-attention are not part of this walkthrough.")


def render(selection) -> None:
    st.title("Forward pass, step by step", anchor=False)
    require_trace(selection)
    _init_state()
    trace = _run_input(selection)
    cfg = trace.cfg
    batch = trace.input_ids.shape[0]
    _describe(trace)

    controls = st.columns([3, 3, 2])
    layer = index_slider(controls[0], "Layer", cfg.n_layers, key=VIEW.key("layer"),
                               help="Which layer the layer steps show.")
    head = index_slider(controls[1], "Head", cfg.n_heads, key=VIEW.key("head"),
                              help="Which head the per-head previews and figures show.")
    item = 0
    if batch > 1:
        item = controls[2].radio("Text", list(range(batch)), key="wk_item",
                                 format_func=lambda i: f"text {i + 1}", horizontal=True)

    steps = walkthrough(trace, layer)
    n_steps = len(steps)
    _clamp(VIEW.key("step"), 1, n_steps)
    labels = axis_labels(trace.batch_tokens[item])
    pick = {"batch": item, "heads": head, "kv_heads": head // (cfg.n_heads // cfg.n_kv_heads),
            "layer": layer + 1}

    # The contents folded into one box beside the buttons, so that on any screen the step and
    # its buttons come first (a list of every step used to push them below the fold at 800 px).
    bar = st.container(horizontal=True, vertical_alignment="bottom", gap="small",
                       key="wk_bar")
    bar.button("◀ Previous", key="wk_prev",
               on_click=step_state(VIEW.key("step"), -1, 1, n_steps),
               disabled=st.session_state[VIEW.key("step")] == 1)
    bar.button("Next ▶", key="wk_next", on_click=step_state(VIEW.key("step"), 1, 1, n_steps),
               disabled=st.session_state[VIEW.key("step")] == n_steps)
    number = bar.selectbox(f"Contents: {n_steps} steps", list(range(1, n_steps + 1)),
                           key=VIEW.key("step"), width=320,
                           format_func=lambda i: f"{i}. {steps[i - 1].title}")
    teacher = bar.toggle("Teacher's notes", key=VIEW.key("teacher"),
                         help="Add the longer explanation to every step.")
    step = steps[number - 1]
    body = st.container()
    with body:
        st.caption(f"Step {number} of {n_steps} · {step.group}")
        st.subheader(f"{number}. {step.title}")
        st.markdown(step.summary)
        if teacher:
            st.info(step.teacher)
        st.latex(step.formula)
        if step.symbols:
            st.caption(step.symbols)
        # two tensors side by side where both fit (else one under the other: "wide_" rows stack);
        # one, or three (Q, K, V), one under the other at full width
        pair = len(step.shown) == 2
        columns = st.container(key="wide_wk_tables").columns(2) if pair else \
            [st.container() for _ in step.shown]
        for column, shown in zip(columns, step.shown):
            with column:
                _show_tensor(shown, pick, labels, cfg.n_layers, selection.model.tokenizer.tokens,
                             PAIR_PX if pair else FULL_PX)
        _figure(step, trace, pick, labels, selection.model)
        _curious(step)
        if step.key == "scores":
            why_from_scores_step(trace, layer, head)
        if step.key == "stack" and layer + 1 < cfg.n_layers:
            first = next(i for i, s in enumerate(steps, 1) if s.layer is not None)
            st.button(f"Walk through layer {layer + 1} ▶", key="wk_next_layer",
                      on_click=step_state(VIEW.key("layer"), 1, 0, cfg.n_layers - 1,
                                          **{VIEW.key("step"): first}))
        if number == n_steps:
            _where_next(decoder_reason(selection, "Generation") is None)


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py): the step of the forward pass the lesson
    names, its formula, tensors and figure, with no contents list or controls."""
    require_trace(selection)
    pair = bool(selection.pair.strip())
    as_batch = pair and (bool(VIEW.peek("batch")) or not selection.model.cfg.n_token_types)
    trace = _full_trace(selection.model_name, selection.text, selection.pair, as_batch)
    cfg, layer, head = trace.cfg, VIEW.setdefault("layer"), VIEW.setdefault("head")
    steps = walkthrough(trace, layer)
    step = steps[min(max(int(VIEW.setdefault("step")), 1), len(steps)) - 1]
    labels = axis_labels(trace.batch_tokens[0])
    pick = {"batch": 0, "heads": head, "kv_heads": head // (cfg.n_heads // cfg.n_kv_heads),
            "layer": layer + 1}
    drawn = step.figure is not None and not (
        step.figure == "values" and step.shown[-1].dims[-2] not in POS_DIMS)
    above, below = st.container(), st.container()  # the formula above the figure; in
    words, shown = (below, above) if projector.on() else (above, below)  # a room's, under it
    words.latex(step.formula)
    if step.symbols:
        words.caption(step.symbols)
    with shown:
        if drawn:  # the figure first, then only the shapes; else the tensors' tables
            _figure(step, trace, pick, labels, selection.model)
            st.caption(" · ".join(f"{s.label}: shape {list(s.shape)}" for s in step.shown))
            return
        for tensor in step.shown:
            _show_tensor(tensor, pick, labels, cfg.n_layers, selection.model.tokenizer.tokens)
