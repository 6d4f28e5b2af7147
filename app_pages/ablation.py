"""Head ablation: remove heads, re-run the model live, see what changed; every head's importance."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from analysis.ablation import (
    METRICS, Inputs, ablation_report, importance_sweep, model_directory, sentence_pooling,
)
from analysis.cost import sweep_plan
from server import settings
from ui.alphabet import read_text, show_unknown_note_read
from ui.heavy import allowance, cost_words, refusal, room_for
from ui.cache import get_model, shared
from ui.charts import chart_config
from ui.callbacks import add_layer_heads, set_state, toggle_head
from ui.examples import known_label, known_sentence
from ui.sidebar import require_trace, use_known_sentence
from ui.view_state import page_view
from viz.heads import head_grid, next_token_bars, token_bars
from viz.labels import axis_labels, looks_byte_level, visible_text, plain_text

VIEW = page_view("ablation")  # this page's settings (teaching/pages.py declares them)
MODES = {"zero": "Zero: the head outputs nothing",
         "mean": "Mean: the head outputs its average over the text's positions"}
AUTO_SWEEP = 72 * 64  # heads × tokens below which the sweep runs without a click
KEPT_SWEEPS = 16  # sweeps kept for every user of this server (a class often shares a text)
HOSTED_SWEEP_TOKENS = 256  # hosted mode: longer texts get no sweep (72 runs each)
# Short table headers: a long one widens its column past a narrow screen (help has METRICS).
EFFECT_NAMES = {"loss": "How well it predicts the text", "tokens": "How far token vectors turn",
                "sentence": "How far the sentence vector turns"}  # the effect to measure, plainly
SHORT_HEADERS = {"loss": "Δ loss (nats)", "tokens": "1 − cosine (tokens)",
                 "sentence": "1 − cosine (sentence)"}


# Metric labels fit a column of an 800 px screen (three columns: ~16 characters with the help
# icon); longer ones were cut ("Loss on the text (n…"). Their help says the rest.
EFFECT_HELP = ("Δ loss: the loss is how surprised the model is by each next token of the text, "
               "on average (in nats); above 0, it predicts the text worse without the head. "
               "1 − cosine: 0 when a vector points the same way as with every head, up to 2 "
               "when it points the opposite way.")


def _helped_note(values: np.ndarray, model_name: str) -> None:
    """Under the loss grid: heads whose removal made the text easier to predict, said plainly
    (a learner would read them as harmful heads), with a sentence the model knows when it has
    one."""
    better = int((values < 0).sum())
    if not better:
        return
    st.caption(f"Blue cells: the model predicts this text better without that head ({better} "
               f"of {values.size}). A head learned what helped on the model's training text; "
               "on text unlike it, some heads get in the way.")
    if known_sentence(model_name) and st.session_state.get("sb_text") != known_sentence(model_name):
        st.button(known_label(model_name), key="abl_known_text", on_click=use_known_sentence,
                  args=(model_name,))


@st.cache_resource
def _shared_sweeps() -> dict:
    """Finished sweeps, shared across sessions: key -> {metric: [n_layers, head]}. Plain dict
    operations only (atomic under the GIL); the oldest entries are dropped beyond KEPT_SWEEPS."""
    return {}


@shared("ablation")
def _ablate(model_name: str, text: str, pair: str, heads: tuple, mode: str) -> dict:
    with st.spinner("Re-running the model without those heads…"):
        loaded = get_model(model_name)
        return ablation_report(loaded, Inputs.encode(loaded, text, pair or None), heads, mode,
                               sentence_pooling(model_directory(model_name)))


def _without_heads(selection, trace, chosen: list, mode: str) -> None:
    """The model re-run without the chosen heads: what changed, token by token."""
    loaded, tokens = selection.model, trace.tokens
    labels = axis_labels(tokens)
    result = _ablate(selection.model_name, selection.text, selection.pair,
                     tuple(sorted(tuple(h) for h in chosen)), mode)
    names = ", ".join(f"L{lay} H{h}" for lay, h in sorted(chosen))
    st.subheader(f"Without {len(chosen)} head{'s' if len(chosen) > 1 else ''}")
    st.caption(f"Removed: {names}.")
    show_unknown_note_read(selection, read_text(selection.text, trace))  # the "?" tokens below
    cos = result["cosine"]
    if "loss" in result:
        clean_loss, ablated_loss = result["loss"]
        cols = st.columns(3)
        if math.isnan(clean_loss):
            cols[0].info("The loss needs at least two tokens.")
        else:
            cols[0].metric("Loss per token", f"{ablated_loss:.3f}",
                           delta=f"{ablated_loss - clean_loss:+.3f}", delta_color="inverse",
                           help="In nats: the mean cross-entropy of predicting each next "
                           "token of the text. The delta is against the model with every head.")
            cols[1].metric("Perplexity", f"{math.exp(ablated_loss):.1f}",
                           delta=f"{math.exp(ablated_loss) - math.exp(clean_loss):+.1f}",
                           delta_color="inverse")
        cols[2].metric("Mean cosine", f"{float(np.mean(cos)):.4f}",
                       help="Of each token's final vector with and without the heads: 1 "
                       "means every one points the same way as with all heads.")
        if st.session_state.get("abl_pos") not in range(len(tokens)):
            st.session_state["abl_pos"] = len(tokens) - 1
        pos = st.select_slider("Predict the token after", list(range(len(tokens))),
                               key="abl_pos", format_func=lambda i: plain_text(labels[i]))
        ids, p0, p1 = result["candidates"][pos], result["p_clean"][pos], result["p_ablated"][pos]
        best: dict[int, tuple[float, float]] = {}
        for i, a, b in zip(ids.tolist(), p0.tolist(), p1.tolist()):
            best[i] = (a, b)
        order = sorted(best, key=lambda i: -max(best[i]))[:10]
        words = loaded.tokenizer.tokens(order)
        after = visible_text(tokens[pos], looks_byte_level(tokens))
        st.plotly_chart(next_token_bars(words, [best[i][0] for i in order],
                                        [best[i][1] for i in order],
                                        title=f"Next token after “{after}” (position {pos})"),
                        key="abl_next", config=chart_config("next_token"))
        if len(tokens) > 1:
            change = result["nll"][1] - result["nll"][0]  # [pos-1]
            st.plotly_chart(token_bars(
                labels[1:], change, "Change in loss on each token",
                "Δ loss (nats)", "red: harder to predict without the heads; blue: easier",
                diverging=True), key="abl_nll", config=chart_config("loss_change"))
    else:
        cols = st.columns(2)
        cols[0].metric("Mean cosine", f"{float(np.mean(cos)):.4f}",
                       help="Of each token's final vector with and without the heads: 1 "
                       "means every one points the same way as with all heads.")
        if "sentence" in result:
            cols[1].metric("Sentence cosine", f"{result['sentence']:.4f}",
                           help="Of the sentence embedding with and without the heads. The "
                           "sentence embedding of this model: the mean of the final vectors "
                           "over every token, then scaled to length 1.")
    st.plotly_chart(token_bars(tokens, 1 - cos, "How far each token's final vector turned",
                               "1 − cosine",
                               "0 = same direction as with every head; higher = the removed "
                               "heads mattered more for this token"),
                    key="abl_cos", config=chart_config("token_cosine"))


def _grid(values: np.ndarray, metric: str, mode: str, chosen: list, on_select="ignore") -> None:
    """Every head's effect when removed alone, one cell per head; `on_select` is a click's
    callback (a lesson step's figure has none)."""
    st.plotly_chart(
        head_grid(values, title=f"Effect of removing each head alone ({mode})",
                  value_name="Δ loss" if metric == "loss" else "1 − cosine",
                  fmt=".3f", diverging=metric == "loss", marked=[tuple(h) for h in chosen],
                  subtitle=METRICS[metric] + ("; outlined: heads removed above" if chosen
                                              else "")),
        key="abl_grid", on_select=on_select, selection_mode="points",
        config=chart_config("head_importance"))


def _importance(sweep: dict, selection, chosen: list, mode: str, heads_all: list) -> None:
    """Every head's effect when removed alone: a grid to click and the largest ones in a table."""
    n_heads = selection.model.cfg.n_heads
    metrics = [m for m in ("loss", "sentence", "tokens") if m in sweep]
    metric = st.radio("Effect", metrics, key="abl_metric", horizontal=True,
                      format_func=EFFECT_NAMES.get, help=EFFECT_HELP)
    values = sweep[metric]
    _grid(values, metric, mode, chosen, toggle_head("abl_grid", n_heads, VIEW.key("heads")))
    if metric == "loss":
        _helped_note(values, selection.model_name)
    ranking = pd.DataFrame({"layer": [lay for lay, _ in heads_all],
                            "head": [h for _, h in heads_all], "effect": values.reshape(-1)})
    shown = min(10, len(heads_all))
    which = (f"All {shown} heads" if shown == len(heads_all) and shown > 1 else
             f"The {shown} of {len(heads_all)} heads whose removal changes the output most"
             if shown > 1 else f"The one of {len(heads_all)} heads whose removal changes the "
             "output most")
    st.caption(f"{which}, largest change first. Effect: {METRICS[metric]}.")
    effect = st.column_config.NumberColumn(SHORT_HEADERS[metric], help=METRICS[metric],
                                           format="%.4f")
    order = ranking["effect"].abs().sort_values(ascending=False, kind="stable").index
    st.dataframe(ranking.loc[order].head(shown), hide_index=True, width="content",
                 key="abl_ranking", column_config={"effect": effect})


def _sweep(selection, trace, mode: str) -> dict | None:
    """Every head removed alone, measured: {metric: [n_layers, head]}, shared by every user of
    this server. A small text is measured at once; a larger one waits for its button, its cost
    said beside it; a text too long for this server gets a message. None until measured."""
    sweeps, cfg = _shared_sweeps(), trace.cfg
    skey = (selection.model_name, selection.text, selection.pair, mode)
    if skey in sweeps:
        return sweeps[skey]
    n_heads_total = cfg.n_layers * cfg.n_heads
    plan = sweep_plan(cfg, trace.n_tokens, allowance())  # its memory and time, before the click
    if settings.hosted() and trace.n_tokens > HOSTED_SWEEP_TOKENS:
        st.info(f"On this shared server the sweep is limited to texts of up to "
                f"{HOSTED_SWEEP_TOKENS} tokens (this one has {trace.n_tokens}): it runs the model "
                f"{n_heads_total} times. Shorten the text to measure every head.")
        return None
    if refusal(plan):
        st.info(refusal(plan))
        return None
    small = n_heads_total * trace.n_tokens <= AUTO_SWEEP
    if not small:
        st.caption(f"Measuring every head takes {cost_words(plan)}.")
    if not (small or st.button(f"Measure all {n_heads_total} heads ({n_heads_total} runs of "
                               f"{trace.n_tokens} tokens)", key="abl_sweep_btn")):
        return None
    bar = st.progress(0.0, text="Removing one head at a time…")
    loaded = selection.model
    inputs = Inputs.encode(loaded, selection.text, selection.pair or None)
    with room_for(plan) as held:
        sweeps[skey] = importance_sweep(
            loaded, inputs, mode, sentence_pooling(model_directory(selection.model_name)),
            allowance=held, progress=lambda done, total:
            bar.progress(done / total, text=f"{done}/{total} heads"))
    bar.empty()
    for old in list(sweeps)[:-KEPT_SWEEPS]:
        sweeps.pop(old, None)
    return sweeps[skey]


def render(selection) -> None:
    st.title("Head ablation", anchor=False)
    trace = require_trace(selection)
    cfg = trace.cfg
    st.caption(
        "Remove heads and run the model again. What a removed head passes on (the mix of "
        "tokens it attended to) is replaced by zeros, or by its own average over the positions "
        "of this text, which keeps its typical contribution but drops what it says about any "
        "one token.", help="The head's output is replaced before the output projection W_O. "
        "The shared model is never changed: the replacement is a temporary hook that is gone "
        "when the run ends.")

    heads_all = [(lay, h) for lay in range(cfg.n_layers) for h in range(cfg.n_heads)]
    st.session_state["_abl_n_heads"] = cfg.n_heads
    VIEW["heads"] = [tuple(h) for h in VIEW.setdefault("heads") if tuple(h) in heads_all]
    if st.session_state.get("abl_layer") not in range(cfg.n_layers):
        st.session_state["abl_layer"] = 0
    top = st.columns([4, 3])
    chosen = top[0].multiselect("Heads to remove", heads_all, key=VIEW.key("heads"),
                                format_func=lambda lh: f"L{lh[0]} H{lh[1]}",
                                placeholder="Pick heads to remove")
    VIEW.setdefault("mode")
    mode = top[1].radio("Replace each removed head by", list(MODES), key=VIEW.key("mode"),
                        format_func=MODES.get)
    row = st.columns([2, 2, 1, 3], vertical_alignment="bottom")
    row[0].selectbox("Layer", list(range(cfg.n_layers)), key="abl_layer")
    row[1].button("Remove every head of this layer", key="abl_add_layer",
                  on_click=add_layer_heads("abl_layer", VIEW.key("heads"), cfg.n_heads))
    row[2].button("Clear", key="abl_clear", on_click=set_state(**{VIEW.key("heads"): []}))

    if not chosen:
        st.info("No head removed yet: pick heads above, or measure every head below and click "
                "one in its grid, and the model re-runs without them.")
    else:
        _without_heads(selection, trace, chosen, mode)

    st.divider()
    st.subheader("Importance of every head")
    st.caption("Each head removed on its own (one run per head, all with the same replacement), "
               "and the effect measured. The grid answers: which single heads does this text "
               "depend on? Click a head to add it to (or drop it from) the heads removed above.")
    sweep = _sweep(selection, trace, mode)
    if sweep is not None:
        _importance(sweep, selection, chosen, mode, heads_all)


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py): every head's effect when removed alone
    (with the step's replacement), in the first of its measures; a long text's measuring waits
    for its one button, its cost said above it."""
    trace = require_trace(selection)
    mode = VIEW.setdefault("mode")
    sweep = _sweep(selection, trace, mode)
    if sweep is not None:
        metric = next(m for m in ("loss", "sentence", "tokens") if m in sweep)
        _grid(sweep[metric], metric, mode, [])
