"""Generate, step by step: the model writes one token at a time; at each step, what it could
have written, what it chose, what top-k and top-p cut away, and where the token it read last
looked."""

from __future__ import annotations

import streamlit as st

from analysis.generation import (MAX_NEW_TOKENS, MAX_PROMPT_TOKENS, Generation, Sampling,
                                 prompt_window)
from ui.alphabet import show_unknown_note
from ui.callbacks import set_state, step_state
from ui.charts import chart_config
from analysis.seq2seq_runs import is_seq2seq
from ui.decoder_lab import decoder_reason, generation, induction_head
from ui.sidebar import require_trace
from ui.switch import offer_decoder, open_on_decoder, opened_note
from ui.text import md_escape
from ui.view_state import page_view
from ui.widgets import index_slider
from viz.generation import attention_row_figure, next_token_figure, share
from viz.labels import looks_byte_level, visible_text

from .seq2seq import (apply_config_defaults, decoder_config_note, render_seq2seq,
                                 seq2seq_figure)

VIEW = page_view("generate")  # this page's settings (teaching/pages.py declares them)
DEFAULT_NEW = VIEW.spec.by_name["n"].default
MODES = {"greedy": "Greedy: always the most likely token",
         "sample": "Sample: draw at random from the distribution"}
INDUCTION_CLEAR = 0.3  # an induction score above this opens that head first, and says why
CHART_PX = (420, 480)  # the two figures side by side on a wide screen, stacked on a narrow one
HIGHLIGHT_SAFE = set("[]\\")  # a token with these is shown bold only, not in a coloured box


def _controls(vocab: int) -> tuple[int, Sampling]:
    """The settings row: new tokens, greedy or sampling, and the sampling knobs."""
    for name in ("n", "mode", "temp", "topk", "topp", "seed"):
        VIEW.setdefault(name)
    VIEW["n"] = min(int(VIEW["n"]), MAX_NEW_TOKENS)
    VIEW["topk"] = min(int(VIEW["topk"]), vocab)
    top = st.columns([2, 3])
    top[0].slider("New tokens", 1, MAX_NEW_TOKENS, key=VIEW.key("n"),
                  help=f"At most {MAX_NEW_TOKENS}: each one is a full run of the model.")
    off = top[1].radio("How the next token is chosen", list(MODES), key=VIEW.key("mode"),
                       format_func=MODES.get) == "greedy"
    knobs = st.columns(4)
    knobs[0].slider("Temperature", 0.05, 3.0, step=0.05, key=VIEW.key("temp"), disabled=off,
                    help="The scores are divided by it before the softmax: below 1 the "
                    "likely tokens get likelier, above 1 the distribution flattens.")
    knobs[1].number_input("Top-k (0 = off)", 0, vocab, step=1, key=VIEW.key("topk"),
                          disabled=off, help="Keep only the k most likely tokens.")
    knobs[2].slider("Top-p (1 = off)", 0.05, 1.0, step=0.05, key=VIEW.key("topp"),
                    disabled=off, help="Then keep the fewest most likely tokens whose "
                    "probabilities add up to at least p.")
    knobs[3].number_input("Seed", 0, 999_999, step=1, key=VIEW.key("seed"), disabled=off,
                          help="The same seed gives the same text.")
    return _chosen(vocab)


def _chosen(vocab: int) -> tuple[int, Sampling]:
    """The settings' new tokens and sampling, as the step or the settings row set them."""
    for name in ("n", "mode", "temp", "topk", "topp", "seed"):
        VIEW.setdefault(name)
    n_new = min(int(VIEW["n"]), MAX_NEW_TOKENS)
    if VIEW["mode"] == "greedy":
        return n_new, Sampling()
    top_p = float(VIEW["topp"])
    return n_new, Sampling(greedy=False, temperature=float(VIEW["temp"]),
                           top_k=min(int(VIEW["topk"]), vocab) or None,
                           top_p=None if top_p >= 1 else top_p, seed=int(VIEW["seed"]))


def _pieces(loaded, gen: Generation) -> tuple[str, list[str]]:
    """The prompt as text, and each new token decoded on its own."""
    decode = loaded.tokenizer.decode
    return decode(gen.prompt_ids), [decode([i]) for i in gen.new_ids]


def _text_so_far(prompt: str, pieces: list[str], step: int) -> str:
    """Markdown: the prompt and the tokens written before step `step` (1-based), then that
    step's token highlighted. All user and model text escaped."""
    body = md_escape(prompt + "".join(pieces[:step - 1])).replace("\n", "  \n")
    shown = visible_text(pieces[step - 1])
    word = f"**{md_escape(shown)}**"
    if not HIGHLIGHT_SAFE & set(shown):
        word = f":orange-badge[{word}]"
    return f"{body}{word}"


def _step_of(n_steps: int) -> int:
    """The generation step shown (from 1), brought into range."""
    if VIEW.setdefault("step") not in range(1, n_steps + 1):
        VIEW["step"] = 1
    return VIEW["step"]


def _step_slider(n_steps: int) -> int:
    _step_of(n_steps)
    if n_steps == 1:
        st.caption("Step 1 of 1.")
        return 1
    step = st.slider("Step", 1, n_steps, key=VIEW.key("step"),
                     help="Which new token to look at: step 1 is the first one written.")
    row = st.container(horizontal=True)
    row.button("◀ Previous", key="gen_prev", disabled=step == 1,
               on_click=step_state(VIEW.key("step"), -1, 1, n_steps))
    row.button("Next ▶", key="gen_next", disabled=step == n_steps,
               on_click=step_state(VIEW.key("step"), 1, 1, n_steps))
    return step


def _distribution(loaded, gen: Generation, step_index: int) -> None:
    step = gen.steps[step_index]
    words = loaded.tokenizer.tokens(step.top_ids)
    chosen = step.top_ids.index(step.chosen) if step.chosen in step.top_ids else None
    sampling = gen.sampling
    if sampling.greedy:
        sub = "greedy: the most likely token is taken, nothing is cut away"
    else:
        left = "1 token was" if step.n_kept == 1 else f"{step.n_kept} tokens were"
        sub = (f"temperature {sampling.temperature:g}; grey bars were cut away; "
               f"{left} left to draw from")
    fig = next_token_figure(words, step.top_probs, step.top_kept, chosen,
                            None if sampling.greedy else step.cut_top_k,
                            None if sampling.greedy else step.cut_top_p,
                            title=f"Step {step_index + 1}: the likeliest next tokens",
                            subtitle=sub)
    st.plotly_chart(fig, key="gen_next_tokens",
                    config=chart_config("next-tokens", fig, step=step_index + 1))
    byte_level = looks_byte_level(words)
    name = md_escape(visible_text(loaded.tokenizer.tokens([step.chosen])[0], byte_level))
    told = (f"Chosen: “{name}”, probability {share(step.chosen_prob)}"
            + ("" if chosen is not None else ", not among the 10 likeliest") + ".")
    if not sampling.greedy:
        told += (f" Top-k cut away {share(step.cut_top_k)} of the probability and top-p "
                 f"{share(step.cut_top_p)}; the draw was from the {share(step.kept_mass)} "
                 "left, scaled back up to 1.")
    st.caption(told)


def _first_head(model_name: str, cfg) -> None:
    """When neither the session nor the link sets the head: open on an induction head."""
    if VIEW.given("layer") is None:
        layer, head, score = induction_head(model_name)
        if score < INDUCTION_CLEAR:  # no head does it: open the last layer's first head
            layer, head = cfg.n_layers - 1, 0
        VIEW["layer"], VIEW["head"] = layer, head
        st.session_state["_gen_induction"] = (layer, head, score) if score >= INDUCTION_CLEAR \
            else None
    VIEW.setdefault("layer")  # the link's layer, when it gives one, into the slider
    VIEW.setdefault("head", 0)


def _attention(model_name: str, loaded, gen: Generation, step_index: int, cfg) -> None:
    _first_head(model_name, cfg)
    cols = st.columns(2)
    layer = index_slider(cols[0], "Layer", cfg.n_layers, VIEW.key("layer"))
    head = index_slider(cols[1], "Head", cfg.n_heads, VIEW.key("head"))
    _attention_row(loaded, gen, step_index, (layer, head), cfg)


def _attention_row(loaded, gen: Generation, step_index: int, at: tuple[int, int], cfg) -> None:
    """Where the token read last looked, in head `at` (layer, head), and what that shows."""
    step, (layer, head) = gen.steps[step_index], at
    keys = gen.ids[step.window_start:step.position + 1]
    tokens = loaded.tokenizer.tokens(keys)
    reader = visible_text(tokens[-1], looks_byte_level(tokens))
    fig = attention_row_figure(tokens, step.attention[layer, head].numpy(), step.window_start,
                               gen.n_prompt, title=f"Layer {layer}, head {head}: where the last "
                               "token looked",
                               subtitle="blue: the prompt; orange: written by the model; the "
                               "outlined bar is the token itself")
    st.plotly_chart(fig, key="gen_attention",
                    config=chart_config("generation-attention", fig, layer=layer, head=head))
    st.caption(f"To choose step {step_index + 1}'s token the model read up to "
               f"“{md_escape(reader)}” (position {step.position}). Its row of attention covers "
               "only the tokens before it and itself: the causal mask hides everything after, "
               "which has not been written yet.")
    picked = st.session_state.get("_gen_induction")
    if picked and picked[:2] == (layer, head) and cfg.n_layers * cfg.n_heads > 1:
        st.caption(f"This head opened first because, of all heads, it acts most like an "
                   f"induction head (score {picked[2]:.2f}: on a random sequence seen twice, "
                   "the attention it gives to the token after the earlier copy). Generate "
                   "a repeated text and watch it look back.")


def window_note_at(gen: Generation, step: int, n_ctx: int) -> str | None:
    """Whether step `step` (from 1) read the whole text or only its last `n_ctx` tokens, in one
    line; None while no step of this generation had to leave tokens out."""
    first = next((i + 1 for i, s in enumerate(gen.steps) if s.window_start > 0), None)
    if first is None:
        return None
    if step >= first:
        return (f"By this step the text is longer than the {n_ctx} tokens this model reads at a "
                f"time, so this step read only the last {n_ctx} (from step {first} on, every "
                "step does).")
    return (f"The text grows past the {n_ctx} tokens this model reads at a time at step "
            f"{first}; from then on each step reads only the last {n_ctx}.")


def _written(selection, n_new: int, sampling: Sampling, eos) -> tuple[Generation, list, int]:
    """The generation from the sidebar's text (its last tokens when it is too long): the
    generation, the prompt's ids, and how many of its tokens were left out."""
    limit = min(MAX_PROMPT_TOKENS, selection.model.cfg.n_ctx)
    prompt_ids, left_out = prompt_window(selection.model, selection.text, limit)
    return (generation(selection.model_name, tuple(prompt_ids), n_new, sampling, eos),
            prompt_ids, left_out)


def render(selection) -> None:
    st.title("Generate, step by step", anchor=False)
    reason = None if selection.model is None else decoder_reason(selection, "Generation",
                                                                 seq2seq_ok=True)
    # Generation reads a long prompt's LAST tokens (said below), so not the sidebar's note that
    # the run read the FIRST ones; a model that cannot generate keeps that note.
    trace = require_trace(selection, context_note=reason is not None)
    window_note = st.empty()  # where generation starts in a long prompt, beside the other notes
    if reason is not None:
        open_on_decoder(selection, reason, key="gen_switch")
        st.stop()
    opened_note(selection, key="gen_switch")

    loaded, cfg = selection.model, trace.cfg
    if is_seq2seq(loaded):  # the source is the sidebar's text; the decoder writes
        render_seq2seq(selection, VIEW, _controls, _step_slider, _distribution)
        return
    limit = min(MAX_PROMPT_TOKENS, cfg.n_ctx)
    st.caption(
        "The model writes one token at a time: it reads the text so far, gives every token of its "
        "vocabulary a probability of coming next, picks one, adds it to the text and reads again. "
        "The prompt is the text in the sidebar; change it there.")
    defaults = apply_config_defaults(VIEW, loaded, selection.model_name, cfg.d_vocab)
    n_new, sampling = _controls(cfg.d_vocab)
    if defaults.path is not None:
        st.caption(decoder_config_note(loaded, defaults))
    st.caption(f"Bounds: up to {MAX_NEW_TOKENS} new tokens. Generation starts from the last "
               f"{limit} tokens of a longer prompt. This model reads {cfg.n_ctx} tokens at a time: "
               f"once the text is longer, each step reads only the last {cfg.n_ctx}.")
    gen, prompt_ids, left_out = _written(selection, n_new, sampling, defaults.eos_token_ids)
    if left_out:
        window_note.warning(
            f"The prompt is {len(prompt_ids) + left_out:,} tokens long and this model reads "
            f"{limit} "
            f"at a time, so generation continues from the prompt's last {limit} tokens (the first "
            f"{left_out:,} are left out), and each new step again reads only the last {limit}.")
    slid_note = st.empty()  # filled once the step is known: true at the step shown

    prompt_text, pieces = _pieces(loaded, gen)
    n_steps = len(gen.steps)
    step = _step_slider(n_steps)
    if not left_out:  # with a cut prompt, the note above says it
        note = window_note_at(gen, step, cfg.n_ctx)
        if note:
            slid_note.info(note)
    show_unknown_note(selection)
    st.caption("The text so far, with this step's new token marked:")
    st.markdown(("…" if left_out else "") + _text_so_far(prompt_text, pieces, step))
    row = st.container(horizontal=True, gap="small")  # side by side, or one under the other
    left, right = row.container(width=CHART_PX[0]), row.container(width=CHART_PX[1])
    with left:
        _distribution(loaded, gen, step - 1)
    with right:
        _attention(selection.model_name, loaded, gen, step - 1, cfg)

    if left_out:  # not the whole text: say so, and mark where it starts
        st.subheader(f"The last {len(prompt_ids):,} tokens of the prompt, then the new text")
        st.code("…" + prompt_text + "".join(pieces), language=None, wrap_lines=True)
    else:
        st.subheader("The whole text")
        st.code(prompt_text + "".join(pieces), language=None, wrap_lines=True)
    more = not gen.stopped_at_end and n_new < MAX_NEW_TOKENS
    st.caption(gen.why_stopped + (" Raise “New tokens” above for more." if more else ""))
    if not selection.pair:  # the sidebar's own text (all of it) and the new tokens
        st.button("Put the whole text in the sidebar", key="gen_to_sidebar",
                  on_click=set_state(sb_text=selection.text + "".join(pieces)),
                  help="Then generate on from there, or open “Which parts made the logit” to see "
                  "why the model wrote what it wrote.")


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py) at the step's generation step: the text
    so far with that step's token marked, then the likeliest next tokens (and what sampling cut
    away), or where the token read last looked in the step's head."""
    reason = None if selection.model is None else decoder_reason(selection, "Generation",
                                                                 seq2seq_ok=True)
    trace = require_trace(selection, context_note=reason is not None)
    if reason is not None:
        offer_decoder(selection, reason, key="gen_switch")
        return
    loaded, cfg = selection.model, trace.cfg
    if is_seq2seq(loaded):
        seq2seq_figure(selection, VIEW, name == "attention", _chosen, _step_of, _distribution)
        return
    defaults = apply_config_defaults(VIEW, loaded, selection.model_name, cfg.d_vocab)
    gen, _, left_out = _written(selection, *_chosen(cfg.d_vocab), defaults.eos_token_ids)
    step = _step_of(len(gen.steps))
    prompt_text, pieces = _pieces(loaded, gen)
    st.markdown(("…" if left_out else "") + _text_so_far(prompt_text, pieces, step))
    if name != "attention":
        _distribution(loaded, gen, step - 1)
        return
    _first_head(selection.model_name, cfg)
    at = [min(max(int(VIEW[setting]), 0), count - 1)
          for setting, count in (("layer", cfg.n_layers), ("head", cfg.n_heads))]
    _attention_row(loaded, gen, step - 1, tuple(at), cfg)
