"""Attention beside its effect: six measures of how much each token matters for one target,
and how far they agree with raw attention."""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis.ablation import Inputs, model_directory, sentence_pooling
from analysis.cost import effect_plan, largest_chunk
from analysis.effect import MAX_OCCLUSION_TOKENS, METHODS, all_heads
from analysis.effect_target import make_target, visible_length
from analysis.gradients import MAX_GRADIENT_TOKENS, MAX_IG_BATCH_TOKENS, MAX_IG_STEPS
from ui.alphabet import show_unknown_note_read
from ui.cache import get_model, shared
from ui.callbacks import pick_head
from ui.charts import chart_config
from ui.heavy import allowance, cost_words, refusal, room_for
from ui.patching_inputs import first_words, token_count, use_text
from ui.reference import check_numbers
from ui.sidebar import require_trace
from ui.switch import needs_lm_head, offer_decoder
from ui.text import md_escape
from ui.view_state import page_view
from ui.widgets import index_slider, shown_model_name
from viz.effect import method_strip, strip_window, words_figure
from viz.heads import head_grid
from viz.labels import axis_labels, plain_text

from .words import (
    AGREEMENT, BASELINE_ALONE, BASELINE_HELP, BASELINE_LABEL, MEANINGS, NAMES, NO_OCCLUSION,
    OCCLUSION, RHO_SCALE, STEPS_HELP, WARNING, baseline_names, ig_notes, limits, offered,
)


VIEW = page_view("effect")  # this page's settings (teaching/pages.py declares them)
STEPS = VIEW.spec.by_name["steps"].choices
DEFAULT_STEPS = VIEW.spec.by_name["steps"].default  # lowered for a long text (steps × tokens)
AUTO_WORK = 32 * 64  # tokens × steps small enough to run without a click


def _init_state(n_tokens: int, cfg) -> None:
    """Session defaults, from the link the first time."""
    VIEW.setdefault("layer", cfg.n_layers - 1)
    if cfg.causal:  # an encoder's target is the whole sentence: no position
        VIEW.setdefault("pos", n_tokens - 1)
    for name in ("head", "average", "steps", "baseline", "occlusion"):
        VIEW.setdefault(name)


@shared("effect_target")
def _target(model_name: str, text: str, second: str, position: int | None):
    loaded = get_model(model_name)
    inputs = Inputs.encode(loaded, text)
    if loaded.cfg.causal:
        return make_target(loaded, inputs, position=position)
    pooling = sentence_pooling(model_directory(model_name)) or "mean"
    return make_target(loaded, inputs, second=second or None, pooling=pooling)


@shared("effect")
def _all_heads(model_name: str, text: str, second: str, position: int | None, baseline: str,
               steps: int, occlusion: str | None):
    loaded = get_model(model_name)
    target = _target(model_name, text, second, position)
    inputs = Inputs.encode(loaded, text)
    k = visible_length(target, inputs.input_ids.shape[1])
    with room_for(effect_plan(loaded.cfg, k, steps, occlusion is not None, allowance())) as held:
        return all_heads(loaded, inputs, target, baseline, steps, occlusion, allowance=held)


def _position(labels: list[str], causal: bool, choose: bool = True) -> int | None:
    """A decoder's target position (default the last token; picked here when `choose`);
    None for an encoder."""
    if not causal:
        return None
    n = len(labels)
    VIEW["pos"] = min(max(int(VIEW["pos"]), 0), n - 1)
    if n == 1 or not choose:
        return VIEW["pos"]
    return st.columns([1, 2])[0].selectbox(
        "Predict the token after", list(range(n)), key=VIEW.key("pos"),
        format_func=lambda i: plain_text(labels[i]))


def _choice(col, label: str, alone: str, options: list[str], names: dict, setting: str,
            help: str | None = None) -> str:
    """A radio over `options`, or, when there is only one, that choice said in plain text
    (`alone` with "{}" for its name): a radio with a single option offers nothing to pick."""
    if len(options) == 1:
        col.markdown(":small[" + alone.format(f"**{names[options[0]]}**") + "]", help=help)
        return options[0]
    return col.radio(label, options, key=VIEW.key(setting), format_func=names.get, help=help)


def _steps_allowed(k: int) -> list[int]:
    return [s for s in STEPS if s <= MAX_IG_STEPS and s * k <= MAX_IG_BATCH_TOKENS]


def _method_settings(loaded, k: int) -> tuple[str, int, str | None]:
    """Integrated gradients' baseline and steps, and the occlusion mode (None: not run), each
    put back to what this model and text allow when the session's does not fit."""
    chosen = {}
    for setting, options in (("baseline", offered(loaded, baseline_names(loaded))),
                             ("occlusion", offered(loaded, OCCLUSION)),
                             ("steps", _steps_allowed(k))):
        if len(options) == 1 and setting != "steps":  # the only one: said, not kept in the view
            chosen[setting] = options[0]
            continue
        if options and VIEW[setting] not in options:  # steps: at what fits the text, quietly
            VIEW[setting] = options[-1 if setting == "steps" else 0]
        chosen[setting] = VIEW[setting]
    return (chosen["baseline"], chosen["steps"],
            None if k > MAX_OCCLUSION_TOKENS else chosen["occlusion"])


def _method_controls(loaded, k: int) -> tuple[str, int, str | None]:
    """Integrated gradients' baseline and steps, and the occlusion mode."""
    _method_settings(loaded, k)
    cols = st.columns(3)
    names = baseline_names(loaded)
    baseline = _choice(cols[0], BASELINE_LABEL, BASELINE_ALONE, offered(loaded, names), names,
                       "baseline", help=BASELINE_HELP)
    allowed = _steps_allowed(k)
    steps = cols[1].select_slider("Integrated gradients: steps", options=allowed,
                                  key=VIEW.key("steps"), help=STEPS_HELP)
    if allowed[-1] < DEFAULT_STEPS:  # the usual start does not fit: said quietly
        cols[1].caption(f"Up to {allowed[-1]} steps for {k} tokens.")
    if k > MAX_OCCLUSION_TOKENS:
        cols[2].caption(f"Occlusion: not run. It runs the model once per token, for at most "
                        f"{MAX_OCCLUSION_TOKENS} tokens; the target sees {k}.")
        return baseline, steps, None
    mode = _choice(cols[2], "Occlusion: for each token in turn",
                   "Occlusion: for each token in turn, {}.", offered(loaded, OCCLUSION),
                   OCCLUSION, "occlusion")
    return baseline, steps, mode


def _shorten_button(selection, limit: int, key: str) -> None:
    """One click to put the text's first whole words, at most `limit` tokens, in the sidebar."""
    loaded = selection.model
    shorter = first_words(loaded, selection.text, limit)
    if shorter:
        st.button(f"Use the first {token_count(loaded, shorter)} tokens of the text", key=key,
                  on_click=use_text(shorter), type="primary",
                  help="Puts the beginning of your text, in whole words, in the sidebar.")


def _values(every, layer: int, head: int | None):
    """(importance, its six rows [method, tokens] with NaN where a token is not measured,
    which attention they are read for, in words)."""
    imp = every.importance(layer, head)
    values = np.stack([np.where(imp.visible, imp.scores[m], np.nan) for m in METHODS])
    return imp, values, "the average of its heads" if head is None else f"head {head}"


def _strip(every, layer: int, head: int | None, labels: list[str], method: str) -> None:
    """The six measures, one row each, opened on the token `method` rates highest."""
    imp, values, where = _values(every, layer, head)
    names = [NAMES[m] + ("" if m != "occlusion" or every.occlusion_mode else " (not run)")
             for m in METHODS]
    shown = values[METHODS.index(method)]  # [tokens]
    focus = int(np.nanargmax(np.abs(shown))) if np.isfinite(shown).any() else 0
    strip = method_strip(labels, values, names, [imp.correlations[m] for m in METHODS],
                         "How much each token matters, six ways",
                         f"attention: layer {layer}, {where}; each row scaled to its largest "
                         "value (red > 0 > blue), hover for real values; right: rank agreement "
                         f"with attention (Spearman ρ: {RHO_SCALE}), over "
                         f"{int(imp.visible.sum())} tokens",
                         window=strip_window(len(labels), focus))
    st.plotly_chart(strip, key="eff_strip", config=chart_config("effect", strip,
                    layer=layer, head=head))


def _results(selection, every, layer: int, head: int | None, labels: list[str],
             n_heads: int) -> None:
    imp, values, where = _values(every, layer, head)
    _strip(every, layer, head, labels, _words(labels, values, layer, where))
    st.caption(AGREEMENT)
    with st.expander("What each row measures"):
        st.markdown("\n".join(f"- **{NAMES[m]}**: {MEANINGS[m]}." for m in METHODS))
    allowed = _steps_allowed(int(imp.visible.sum()))
    caption, warning = ig_notes(selection.model, imp.ig,
                                allowed[-1] if allowed else None)
    st.caption(caption)
    if warning:
        st.warning(warning)
    st.subheader("Which heads look where the effect is?")
    if every.occlusion_mode is None:
        st.info(NO_OCCLUSION + " Shorten the text to see it:")
        _shorten_button(selection, MAX_OCCLUSION_TOKENS, "eff_short_occ")
        return
    _heads(every, layer, head, n_heads)


def _measured(values: np.ndarray) -> list[str]:
    return [m for m, row in zip(METHODS, values) if np.isfinite(row).any()]


def _coloured_by(values: np.ndarray) -> str:
    """The measure the text is coloured by: the session's (a link's, else the declared
    default) when it was measured, else integrated gradients or the last one measured."""
    measured = _measured(values)
    if VIEW.setdefault("words") not in measured:
        VIEW["words"] = measured[-1] if "integrated_gradients" not in measured else \
            "integrated_gradients"
    return VIEW["words"]


def _words(labels: list[str], values: np.ndarray, layer: int, where: str) -> str:
    """The text itself, each token coloured by one measure (picked here): readable however
    long the text is, where the strip below is one thin column per token. Returns the
    measure picked: the strip opens on the token it rates highest."""
    _coloured_by(values)
    method = st.radio("Colour the text by", _measured(values), key=VIEW.key("words"),
                      horizontal=True, format_func=NAMES.get, help="Each measure, as in the "
                      "rows of the strip below; the expander under it says what each one "
                      "measures.")
    row = values[METHODS.index(method)]
    attention = f", layer {layer}, {where}" if method in ("attention", "attention_norm") else ""
    fig = words_figure(labels, row, NAMES[method], f"Your text, coloured by "
                       f"{NAMES[method].lower()}{attention}",
                       f"{MEANINGS[method].replace('the same', 'gradient × input')}; "
                       "scaled to the largest value: red raises the "
                       "target, blue lowers it, grey: no value; hover for each token's value")
    st.plotly_chart(fig, key="eff_text_fig", config=chart_config("effect-words", fig))
    return method


def _heads(every, layer: int, head: int | None, n_heads: int) -> None:
    """Every head's attention against occlusion (run: `every.occlusion_mode` is set)."""
    fig = head_grid(every.head_correlations, title="Each head's attention against occlusion",
                    value_name="Spearman ρ", diverging=True,
                    marked=[] if head is None else [(layer, head)],
                    subtitle="Spearman of each head's attention row with the occlusion effect; "
                    "red: the head looks at the tokens that matter; click a head to open it")
    st.plotly_chart(fig, key="eff_heads", config=chart_config("effect-heads", fig),
                    on_select=pick_head("eff_heads", n_heads),
                    selection_mode="points")


def _not_applicable(selection) -> str | None:
    """Why this page cannot measure the sidebar's model (Markdown), or None."""
    loaded = selection.model
    if getattr(loaded.model, "dec_cfg", None) is not None:
        return ("This page follows one stack of layers from your text to one number. "
                f"{md_escape(shown_model_name(selection.model_name))} has an encoder and "
                "a separate decoder, so there is no single number to trace back.")
    return needs_lm_head(selection, "This page") if loaded.cfg.causal else None


def _stop_unless_applies(selection) -> None:
    reason = _not_applicable(selection)
    if reason:
        offer_decoder(selection, reason, key="eff_switch")
        st.stop()


def _too_long(k: int) -> str | None:
    """Why a text the target sees `k` tokens of is not measured, or None."""
    if k > MAX_GRADIENT_TOKENS or not _steps_allowed(k):
        return (f"This text has {k} tokens; the gradient methods take at most "
                f"{MAX_GRADIENT_TOKENS}. Shorten the text to measure it")
    return None


def _affordable(plan, selection, k: int, say_cost: bool = True, shorten: bool = True) -> bool:
    """Say what measuring costs, before it runs; False (with a way out, when `shorten`: the
    longest start of the text that fits) when even its smallest pieces need more memory than
    this server allows one analysis."""
    why = refusal(plan)
    if why:
        st.info(why)
        if shorten:
            cfg = selection.model.cfg
            fits = largest_chunk(lambda n: effect_plan(cfg, n, 1, True).least, allowance(), k)
            _shorten_button(selection, fits, "eff_short_mem")
        return False
    if say_cost:
        st.caption(f"Measuring every token takes {cost_words(plan)}.")
    return True


def _after_click(request: tuple, k: int) -> tuple | None:
    """A long measurement waits for its button: until it is pressed, the request to run now
    (integrated gradients with the most steps that run at once), or None (nothing runs)."""
    steps, mode = request[5], request[6]
    quick = [s for s in _steps_allowed(k) if k * s <= AUTO_WORK]
    runs = f"{k} occlusion runs" if mode else "no occlusion"
    slot = st.empty()
    if slot.button(f"Measure every token ({steps} gradient steps, {runs}, {k} tokens)",
                   key="eff_run", type="primary"):
        slot.empty()
        return request
    if not quick:
        st.caption(f"Nothing is measured until you press the button: even the fewest "
                   f"gradient steps take too long on {k} tokens to run at once.")
        return None
    st.caption(f"Shown now: integrated gradients with {quick[-1]} steps, which run at "
               f"once. The {steps} steps you chose are more exact and wait for the "
               "button above.")
    return request[:5] + (quick[-1],) + request[6:]


def _measure(selection, request: tuple, k: int, in_step: bool = False):
    """Every token measured for `request` (model, text, second text, position, baseline,
    steps, occlusion), by this page's rules: the cost said before it starts, a click first
    when it is long; None when nothing is measured. `in_step`: a lesson step's figure, which
    says the cost only beside the button and offers no shorter text."""
    steps, mode = request[5], request[6]
    asked = st.session_state.setdefault("_eff_asked", [])
    wait = request not in asked and k * steps > AUTO_WORK
    plan = effect_plan(selection.model.cfg, k, steps, mode is not None, allowance())
    if not _affordable(plan, selection, k, say_cost=wait or not in_step, shorten=not in_step):
        return None
    if wait:
        request = _after_click(request, k)
        if request is None:
            return None
    if request not in asked:
        asked[:] = (asked + [request])[-8:]
    with st.spinner("Measuring every token six ways…"):
        return _all_heads(*request)


def _setup(selection, cfg, choose: bool) -> tuple[list[str], int | None, object]:
    """The first text's token labels, the target's position (a decoder's; picked here when
    `choose`) and the target."""
    labels = axis_labels(selection.model.encode(selection.text).tokens[0])  # the first text
    _init_state(len(labels), cfg)
    position = _position(labels, cfg.causal, choose)
    second = "" if cfg.causal else selection.pair
    return labels, position, _target(selection.model_name, selection.text, second, position)


def render(selection) -> None:
    st.title("Attention beside its effect", anchor=False)
    trace = require_trace(selection)
    _stop_unless_applies(selection)
    loaded, cfg = selection.model, trace.cfg
    st.markdown(WARNING)
    second = "" if cfg.causal else selection.pair
    labels, position, target = _setup(selection, cfg, choose=True)
    tokens = len(labels)
    st.markdown(f"**Target:** {md_escape(target.label)}")
    show_unknown_note_read(selection, selection.text[:tokens])  # one token a character
    if not cfg.causal and selection.pair:
        st.caption("The second sentence is only the point of comparison here: the tokens "
                   "measured are those of the first text.")
    k = visible_length(target, tokens)
    top = st.columns([3, 3, 2], vertical_alignment="bottom")
    layer = index_slider(top[0], "Layer", cfg.n_layers, key=VIEW.key("layer"))
    average = top[2].toggle("Average of heads", key=VIEW.key("average"))
    head = index_slider(top[1], "Head", cfg.n_heads, key=VIEW.key("head"), disabled=average)
    baseline, steps, mode = _method_controls(loaded, k)
    allowed = _steps_allowed(k)
    st.caption(limits(k, allowed[-1] if allowed else 0,
                      cfg.n_ctx if trace.dropped[0] else None))
    if _too_long(k):
        st.info(_too_long(k) + ":")
        _shorten_button(selection, MAX_GRADIENT_TOKENS, "eff_short_grad")
        return
    every = _measure(selection, (selection.model_name, selection.text, second, position,
                                 baseline, steps, mode), k)
    if every is None:
        return
    _results(selection, every, layer, None if average else head, labels, cfg.n_heads)
    check_numbers(selection, "eff")


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py), in the step's view: the six measures
    for the step's head ("strip"), or every head's attention against occlusion ("heads"). A
    long measurement keeps its button and its cost above the figure."""
    cfg = require_trace(selection).cfg
    reason = _not_applicable(selection)
    if reason:
        return st.info(reason)
    labels, position, target = _setup(selection, cfg, choose=False)
    k = visible_length(target, len(labels))
    if _too_long(k):
        return st.info(_too_long(k) + " in the sidebar.")
    baseline, steps, mode = _method_settings(selection.model, k)
    every = _measure(selection, (selection.model_name, selection.text,
                                 "" if cfg.causal else selection.pair, position, baseline,
                                 steps, mode), k, in_step=True)
    if every is None:
        return
    layer, head = VIEW["layer"], None if VIEW["average"] else VIEW["head"]
    if name == "heads":
        if every.occlusion_mode is None:
            return st.info(NO_OCCLUSION)
        return _heads(every, layer, head, cfg.n_heads)
    _strip(every, layer, head, labels, _coloured_by(_values(every, layer, head)[1]))
