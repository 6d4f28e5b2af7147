"""Activation patching: run a corrupted prompt, put back one piece of the clean run, and see
how much of the clean answer comes back. Every (layer, position) of the residual stream, and
every head; plus the induction preset on tiny-induction."""

from __future__ import annotations

import streamlit as st

from analysis.induction import repeat_scores
from analysis.patching import (
    MAX_GRID_CELLS, MAX_PATCH_TOKENS, head_patching, induction_preset,
    prepare, residual_patching,
)
from analysis.cost import patching_plan
from analysis.seq2seq_runs import is_seq2seq
from server import settings
from ui.heavy import allowance, cost_words, room_for
from ui.cache import get_model, shared
from ui.charts import chart_config
from ui.patching_inputs import (
    best_corruption, default_corruption, flip_corruption, follow_default, head_picker,
    open_patched_head, switch_model, token_count,
)
from ui.sidebar import require_trace
from ui.switch import needs_lm_head, open_on_decoder, opened_note
from ui.text import md_escape
from ui.view_state import page_view
from viz.heads import head_grid
from viz.labels import looks_byte_level, visible_text
from viz.patching import position_labels, residual_grid

from .change import change_lines
from .pair import metric_pair, pair_choices
from .notes import (
    clean_prompt, metric_line, mismatch, name_heads, small_gap, top_head_line,
)
from .zoom import grid_columns
from .seq2seq import render_seq2seq_patching, seq2seq_patching_figure

VIEW = page_view("patching")  # this page's settings (teaching/pages.py declares them)
PRESET_MODEL = "tiny-induction"
N_SYMBOLS = 36  # tiny-induction's letters a-z and digits (id 36 is the unknown mark)
AUTO_WORK = 40_000  # patched runs × tokens below which the grids run without a click
MODES = {"prompts": "Your two prompts", "preset": "Induction preset (tiny-induction)"}
WHICH = {"first": "the first copy (previous-token and induction heads)",
         "second": "the second copy (induction heads only)"}
RECOVERED = ("Each cell: how much of the clean answer comes back when that one piece of the "
             "corrupted run is replaced by its value from the clean run (0 = nothing, as "
             "corrupted; 1 = all of it, as clean).")


def _rows(n_layers: int) -> list[str]:
    return [f"into layer {i}" for i in range(n_layers)] + [f"out of layer {n_layers - 1}"]


@shared("patching")
def _patch(model_name: str, clean: str, corrupted: str, answer, wrong, _bar) -> dict:
    loaded = get_model(model_name)
    p = prepare(loaded, clean, corrupted, answer, wrong)
    total = (loaded.cfg.n_layers + 1) * p.n_pos + loaded.cfg.n_layers * loaded.cfg.n_heads
    with room_for(patching_plan(loaded.cfg, p.n_pos, allowance())) as held:
        resid = residual_patching(p, allowance=held, progress=lambda d, t: _bar.progress(
            d / total, text=f"{d}/{total} patches"))
        heads = head_patching(p, allowance=held, progress=lambda d, t: _bar.progress(
            (resid.size + d) / total, text=f"{resid.size + d}/{total} patches"))
    return dict(resid=resid, heads=heads, clean_tokens=p.clean_tokens, kind=p.kind,
                corrupted_tokens=p.corrupted_tokens, answer=p.answer, wrong=p.wrong,
                position=p.position, clean_value=p.clean_value,
                corrupted_value=p.corrupted_value)


@shared("patching_default")
def _decoder_default(model_name: str, text: str, limit: int) -> tuple[str, bool]:
    """A decoder's default corrupted prompt, and whether it flips the model's top next token:
    a change before the last token that does (so the grid shows information moving), else a
    swap that moves the answer clearly."""
    loaded = get_model(model_name)
    flip = flip_corruption(loaded, text, limit)
    return (flip, True) if flip else (best_corruption(loaded, text, limit), False)


@shared("patching_preset")
def _preset(model_name: str, length: int, which: str, seed: int, n_seqs: int, _bar) -> dict:
    loaded = get_model(model_name)
    result = induction_preset(loaded, length, N_SYMBOLS, seed, n_seqs, which, progress=lambda d, t:
                              _bar.progress(d / t, text=f"{d}/{t} sequences"))
    scores = repeat_scores(loaded.model)
    return dict(result, induction=scores["induction"].numpy(),
                previous=scores["previous"].numpy())


def _init_state(on_preset_model: bool) -> None:
    """Session defaults, from the link the first time."""
    VIEW.setdefault("mode", "preset" if on_preset_model else "prompts")


def _show_grids(r: dict, cfg, chart_prefix: str, text_key: str | None, heads_note: str):
    """The residual grid and the head grid, with what they show; returns the top head."""
    cosine = r["kind"] == "cosine"
    st.markdown(f"**The residual stream** (the vector each position carries from layer to "
                f"layer). {RECOVERED} " + (
        "Read it from the top row down: at first only the positions where the prompts differ "
        "can matter; in the last row, " + ("every position counts, since the metric averages "
                                           "over all of them." if cosine else
                                           "only the position where the answer is read. The "
                                           "rows between show the information moving.")))
    differ = _stream_grid(r, cfg, chart_prefix)
    if not cosine and differ == [r["position"]]:
        st.caption("The prompts differ only at the last position, where the answer is read, so "
                   "only that column brings it back. To watch information move from one "
                   "position to another, change a word further back, or try the induction "
                   "preset.")
    st.markdown("**Every head.** One head's output (at every position) put back from the "
                f"clean run. {heads_note} Click a head to open it on the attention page.")
    return _heads_grid(r, cfg, chart_prefix, text_key)


def _stream_grid(r: dict, cfg, chart_prefix: str, switch: bool = True) -> list[int]:
    """The residual stream's grid (`switch`: with its switch to every position, on a long
    prompt); returns the positions where the prompts differ."""
    byte_level = looks_byte_level(r["clean_tokens"])
    labels = position_labels(r["clean_tokens"], r["corrupted_tokens"], byte_level)
    differ = [i for i, (a, b) in enumerate(zip(r["clean_tokens"], r["corrupted_tokens"]))
              if a != b]
    cosine = r["kind"] == "cosine"
    read = None if cosine else r["position"]
    every = VIEW.key("all") if chart_prefix == "pt" else f"{chart_prefix}_all"
    columns, zoom = grid_columns(len(labels), differ, read, _rows(cfg.n_layers), every, switch)
    fig = residual_grid(r["resid"], labels, _rows(cfg.n_layers),
                        title="Metric recovered, patching the residual stream",
                        subtitle="rows = where in the stack; columns = positions" + (
                            "" if cosine else "; outlined: where the metric is read") + (
                            f"; {zoom}" if zoom else ""),
                        marked_pos=read, marked_cols=differ, columns=columns)
    st.plotly_chart(fig, key=f"{chart_prefix}_resid", config=chart_config("patching_residual"))
    return differ


def _heads_grid(r: dict, cfg, chart_prefix: str, text_key: str | None) -> tuple[int, int]:
    """Every head's grid (a click opens the head); returns the top head (layer, head)."""
    fig = head_grid(r["heads"], title="Metric recovered, patching one head",
                    value_name="recovered", diverging=True,
                    subtitle="rows = layers, columns = heads; click a head to open it")
    key = f"{chart_prefix}_heads"
    st.plotly_chart(fig, key=key, selection_mode="points",
                    on_select=open_patched_head(key, cfg.n_heads, text_key),
                    config=chart_config("patching_heads"))
    heads = [(lay, h) for lay in range(cfg.n_layers) for h in range(cfg.n_heads)]
    return max(heads, key=lambda lh: r["heads"][lh])


def _patched(selection, clean: str, corrupted: str, answer, wrong, n_clean: int) -> dict | None:
    """Every cell patched, after a click when the work is large (its cost said above the
    button); None until then, or with a warning when the prompts cannot be patched."""
    cfg = selection.model.cfg
    runs = (cfg.n_layers + 1) * n_clean + cfg.n_layers * cfg.n_heads
    key = (selection.model_name, clean, corrupted, answer, wrong)
    if runs * n_clean > AUTO_WORK and st.session_state.get("_pt_ran") != key:
        plan = patching_plan(cfg, n_clean, allowance())
        st.caption(f"Patching every cell takes {cost_words(plan)}.")
        if not st.button(f"Patch every cell ({runs:,} patched runs)", key="pt_run",
                         type="primary"):
            return None
    st.session_state["_pt_ran"] = key
    bar = st.empty()
    try:
        return _patch(selection.model_name, clean, corrupted, answer, wrong, bar)
    except ValueError as exc:
        st.warning(md_escape(str(exc)))
        return None
    finally:
        bar.empty()


def _corruption(selection, loaded, clean: str, limit: int) -> bool:
    """The corrupted prompt in the session (a link's or a lesson's, else one made here, which
    it follows until the user edits it); returns whether the made one flips the top guess."""
    made, flips = _decoder_default(selection.model_name, clean, limit) \
        if loaded.cfg.has_lm_head else (default_corruption(loaded, clean, limit), True)
    VIEW.setdefault("corrupt", made)
    follow_default(VIEW.key("corrupt"), "_pt_default", made)
    return flips


def _prompts(selection, loaded) -> None:
    limit = min(MAX_PATCH_TOKENS, loaded.cfg.n_ctx)
    clean = clean_prompt(selection, loaded, limit)
    if clean is None:
        return
    decoder = loaded.cfg.has_lm_head
    flips = _corruption(selection, loaded, clean, limit)
    source = "the sidebar text" if clean == selection.text else "the first whole words of " \
        "the sidebar text (above)"
    st.caption(f"Clean prompt: {source}. Bounds: both prompts at most {limit} tokens; "
               f"grids of at most {MAX_GRID_CELLS:,} cells.")
    corrupted = st.text_input(
        "Corrupted prompt (same number of tokens, one small change)", key=VIEW.key("corrupt"),
        max_chars=2_000, help="By default the clean prompt with one small change" + (
            " before the last token, picked so that the model's guess for the next token "
            "changes." if decoder else ": a word swapped."))
    if decoder and not flips:
        st.info("On this text no small change before the last token makes the model change "
                "its guess for the next token, so both prompts would prefer the same answer. "
                "The induction preset (button above) shows patching at its clearest.")
    if corrupted.strip() and corrupted != clean:
        st.markdown(change_lines(clean, corrupted))
    n_clean = token_count(loaded, clean)
    if not corrupted.strip():
        st.info("Type a corrupted prompt: the sidebar text with a word changed.")
        return
    n_corrupt = token_count(loaded, corrupted)
    st.caption(f"Clean: {n_clean} tokens · corrupted: {n_corrupt} tokens.")
    if n_clean != n_corrupt:
        mismatch(loaded, clean, corrupted, n_clean, n_corrupt)
        return
    answer, wrong = metric_pair(loaded, clean, corrupted)
    r = _patched(selection, clean, corrupted, answer, wrong, n_clean)
    if r is None:
        return
    cfg = loaded.cfg
    st.caption(metric_line(r, loaded.tokenizer))
    noisy = small_gap(r)
    top = _show_grids(r, cfg, "pt", None, "")
    if not noisy:
        st.caption(top_head_line(r["heads"], top))
    head_picker(cfg, top, "pt", None)


def _preset_settings(cfg) -> int:
    """The preset's settings in the session (a link's or a lesson's, else the defaults), the
    length held to what the model reads; returns the longest length offered."""
    longest = min(24, cfg.n_ctx // 2)
    for name in ("len", "which", "seed", "seqs"):
        VIEW.setdefault(name)
    VIEW["len"] = min(VIEW["len"], longest)
    return longest


def _preset_run(selection, length: int, which: str, seed: int, n_seqs: int) -> dict | None:
    bar = st.empty()
    try:
        return _preset(selection.model_name, length, which, seed, n_seqs, bar)
    except ValueError as exc:  # e.g. a sequence whose corruption changes nothing
        st.warning(f"{md_escape(str(exc))} Try another seed.")
        return None
    finally:
        bar.empty()


def _preset_section(selection, loaded) -> None:
    cfg = loaded.cfg
    longest = _preset_settings(cfg)
    cols = st.columns([2, 3])
    length = cols[0].slider("Length of the random sequence", 4, longest, key=VIEW.key("len"))
    which = cols[1].radio("Corrupt", list(WHICH), key=VIEW.key("which"), format_func=WHICH.get)
    cols = st.columns(2)
    seed = int(cols[0].number_input("Random seed", 0, 9999, step=1, key=VIEW.key("seed")))
    n_seqs = cols[1].slider("Sequences averaged for the head grid", 1, 32, key=VIEW.key("seqs"))
    st.caption(f"Bounds: a sequence of 4 to {longest} tokens, shown twice (at most "
               f"{cfg.n_ctx} tokens, what this model reads at once); up to 32 sequences.")
    r = _preset_run(selection, length, which, seed, n_seqs)
    if r is None:
        return
    clean, corrupted = "".join(r["clean_tokens"]), "".join(r["corrupted_tokens"])
    st.session_state["_pt_clean_text"] = clean
    broken = "first" if which == "first" else "second"
    st.markdown(
        f"Clean: `{clean}` (a random sequence, then the same again)  \n"
        f"Corrupted: `{corrupted}` (the {broken} copy replaced by other random tokens)")
    st.caption(
        "At the end of the clean prompt the model can predict what comes next by looking back: "
        "find where the current token appeared before and copy the token that followed it. "
        "Two heads work together for that: a previous-token head in layer 0 marks each token "
        "with the one before it, and an induction head in layer 1 searches for that mark. In "
        "the corrupted prompt there is nothing to find. Put back the right head from the "
        "clean run and the answer comes back.")
    a, w = (md_escape(visible_text(t)) for t in loaded.tokenizer.tokens([r["answer"],
                                                                         r["wrong"]]))
    st.caption(f"Metric: at the last position, the logit of the clean prediction minus the "
               f"corrupted one (logit(“{a}”) − logit(“{w}”) for the sequence above), "
               "normalised for each sequence.")
    top = _show_grids(r, cfg, "pp", "_pt_clean_text",
                      f"Averaged over {n_seqs} sequence{'s' * (n_seqs > 1)} (the residual "
                      "grid shows the first one). Opening a head puts the clean sequence in "
                      "the sidebar.")
    name_heads(r, which, n_seqs)
    head_picker(cfg, top, "pp", "_pt_clean_text")


INTRO = (
    "Activation patching asks where a model keeps the information that decides its answer. "
    "Take two prompts of the same length that differ in one place: a clean one and a corrupted "
    "one. Run the corrupted one again, but put back one piece of the clean run: the residual "
    "stream (the running vector each token carries from layer to layer) at one layer and "
    "position, or one head's output. If the clean answer comes back, that piece carried what "
    "mattered.")
HOW = ("Nothing in the model is changed for good: each piece is swapped in during one run "
       "only, and the next run starts from the model as it was.")


def render(selection) -> None:
    st.title("Patching: find the circuit", anchor=False)
    st.caption(INTRO, help=HOW)
    trace = require_trace(selection, context_note=False)  # a long text: one message, below
    model = selection.model
    if is_seq2seq(model):  # BART, Marian, T5: a clean and a corrupted source
        render_seq2seq_patching(selection, VIEW)
        return
    if trace.kind == "encoder_decoder":
        open_on_decoder(selection, needs_lm_head(selection, "Patching") or "", key="pt_switch")
        st.stop()
    opened_note(selection, key="pt_switch")
    on_preset = selection.model_name == PRESET_MODEL
    _init_state(on_preset)
    mode = st.radio("What to patch", list(MODES), key=VIEW.key("mode"), horizontal=True,
                    format_func=MODES.get)
    if not on_preset and settings.model_refusal(PRESET_MODEL) is not None:
        if mode == "preset":
            st.info("The induction preset runs on tiny-induction, which this server does not "
                    "offer. Use your own two prompts instead.")
            st.stop()
    elif not on_preset:
        label = ("Switch to tiny-induction and run the preset" if mode == "preset" else
                 "See a ready-made example: a tiny model that copies repeated patterns")
        st.button(label, key="pt_to_preset", type="primary" if mode == "preset" else "secondary",
                  on_click=switch_model(PRESET_MODEL, **{VIEW.key("mode"): "preset"}),
                  help="tiny-induction, a 2-layer model that continues repeated sequences, comes "
                  "with the app. Two of its heads work as a team (a circuit): one marks each "
                  "token with the token before it, the other finds the earlier copy and copies "
                  "what came next (an induction head).")
        if mode == "preset":
            st.info("The preset runs on tiny-induction, a small model trained to continue "
                    "repeated sequences: one click above switches to it.")
            st.stop()
    if mode == "preset":
        _preset_section(selection, model)
    else:
        _prompts(selection, model)


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py), in the step's mode: how much of the
    clean answer each head, or each layer and position, brings back. No controls: only the
    click and its cost line where the prompts' grids ask for one first."""
    trace = require_trace(selection, context_note=False)
    model = selection.model
    if is_seq2seq(model):
        seq2seq_patching_figure(selection, VIEW, name)
        return
    if trace.kind == "encoder_decoder":
        st.info(needs_lm_head(selection, "Patching") or "")
        return
    _init_state(selection.model_name == PRESET_MODEL)
    if VIEW["mode"] == "preset":
        if selection.model_name != PRESET_MODEL:
            st.info("The induction preset runs on tiny-induction, a small model trained to "
                    "continue repeated sequences.")
            return
        _preset_settings(model.cfg)
        r = _preset_run(selection, VIEW["len"], VIEW["which"], VIEW["seed"], VIEW["seqs"])
        prefix, text_key = "pp", "_pt_clean_text"
    else:
        r, prefix, text_key = _prompts_patched(selection, model), "pt", None
    if r is None:
        return
    if name == "stream":
        _stream_grid(r, model.cfg, prefix, switch=False)
    else:
        _heads_grid(r, model.cfg, prefix, text_key)


def _prompts_patched(selection, loaded) -> dict | None:
    """The prompts' grids for the session's corrupted prompt and tokens, drawn nowhere."""
    limit = min(MAX_PATCH_TOKENS, loaded.cfg.n_ctx)
    clean = clean_prompt(selection, loaded, limit)
    if clean is None:
        return None
    _corruption(selection, loaded, clean, limit)
    corrupted, n_clean = VIEW["corrupt"], token_count(loaded, clean)
    if not corrupted.strip() or token_count(loaded, corrupted) != n_clean:
        mismatch(loaded, clean, corrupted, n_clean, token_count(loaded, corrupted))
        return None
    answer = wrong = None
    if loaded.cfg.has_lm_head:
        pair_choices(loaded, clean, corrupted)
        answer, wrong = VIEW["answer"], VIEW["wrong"]
    return _patched(selection, clean, corrupted, answer, wrong, n_clean)
