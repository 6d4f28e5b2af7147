"""The Generate page for an encoder–decoder (BART, Marian, T5): the sidebar's text is the
source the encoder reads; the decoder writes from its start token one token at a time. The
page's own pieces (settings row, step slider, the next-token chart) are passed in from
app_pages/generate/page.py, so both kinds of model share them."""

from __future__ import annotations

import streamlit as st

from analysis.generation import MAX_NEW_TOKENS
from analysis.generation_config import GenerationDefaults, generation_defaults
from analysis.seq2seq_generation import seq2seq_start, source_window
from ui.charts import chart_config
from ui.decoder_lab import seq2seq_generation
from ui.text import md_escape
from ui.widgets import index_slider
from viz.generation import attention_row_figure
from viz.labels import looks_byte_level, visible_text

FULL_BEFORE_FIRST = "The decoder's context is full before its first step: nothing to write."
CHART_PX = (420, 480)  # as the decoder's Generate page: side by side when wide
SEEN_KEY = "_gen_config_model"  # the model whose generation_config.json set this session's knobs


def apply_config_defaults(view, loaded, model_name: str, vocab: int) -> GenerationDefaults:
    """Once per model, put generation_config.json's sampling defaults in the settings a link
    did not set. Returns the defaults (empty without a file)."""
    d = generation_defaults(loaded)
    if st.session_state.get(SEEN_KEY) == model_name:
        return d
    st.session_state[SEEN_KEY] = model_name
    wanted = {"n": None if d.max_new_tokens is None else min(d.max_new_tokens, MAX_NEW_TOKENS),
              "mode": None if d.do_sample is None else ("sample" if d.do_sample else "greedy"),
              "temp": None if d.temperature is None else min(max(d.temperature, 0.05), 3.0),
              "topk": None if d.top_k is None else min(d.top_k, vocab),
              "topp": None if d.top_p is None else max(d.top_p, 0.05)}
    for name, value in wanted.items():
        if value is not None and not view.linked(name):
            view[name] = value
    return d


def config_note(loaded, d: GenerationDefaults, start) -> str:
    """One or two lines: where the start and end tokens and the knobs' defaults came from."""
    tok = loaded.tokenizer
    first = md_escape(visible_text(tok.tokens([start.start])[0]))
    ends = ", ".join(f"“{md_escape(visible_text(t))}”" for t in tok.tokens(list(start.eos)))
    where = dict(start.settings_from)
    line = (f"The decoder starts from “{first}” (from {where['start token']}) and stops after "
            f"{ends} (from {where['end token']}).")
    if start.forced_first is not None:
        forced = md_escape(visible_text(tok.tokens([start.forced_first])[0]))
        line += (f" Its first written token is forced to be “{forced}” "
                 "(forced_bos_token_id in generation_config.json), whatever the scores say.")
    knobs = [n for n in ("max_new_tokens", "do_sample", "temperature", "top_k", "top_p")
             if getattr(d, n) is not None]
    if knobs:
        line += (f" The settings above start from generation_config.json ({', '.join(knobs)}); "
                 "change them freely.")
    elif d.path is None and hasattr(loaded.model, "spec"):  # a Hugging Face folder
        line += " This model folder has no generation_config.json; the settings start plain."
    return " ".join([line, *d.notes])


def decoder_config_note(loaded, d: GenerationDefaults) -> str:
    """For a decoder with a generation_config.json: what it set here, in one line."""
    knobs = [n for n in ("max_new_tokens", "do_sample", "temperature", "top_k", "top_p")
             if getattr(d, n) is not None]
    line = ""
    if d.eos_token_ids:
        ends = ", ".join(f"“{md_escape(visible_text(t))}”"
                         for t in loaded.tokenizer.tokens(list(d.eos_token_ids)))
        line = f"Writing stops after {ends} (eos_token_id in generation_config.json). "
    if knobs:
        line += (f"The settings above start from generation_config.json ({', '.join(knobs)}); "
                 "change them freely.")
    return " ".join([line or "This model's generation_config.json sets nothing this page uses.",
                     *d.notes])


def _cross_figure(gen, step_index: int, layer: int, head: int):
    """The newest decoder token's attention over the source, as bars (no bar is 'itself')."""
    weights = gen.cross[step_index][layer, head].numpy()  # [src_pos]
    n = len(gen.source_tokens)
    fig = attention_row_figure(gen.source_tokens, weights, 0, n, title=f"Layer {layer}, head "
                               f"{head}: where it looked in the source (cross-attention)",
                               subtitle="the encoder's output for each source token")
    fig.data[0].marker.line.color = ["rgba(0,0,0,0)"] * n
    fig.data[0].customdata = ["source"] * n
    return fig


def attention_views(loaded, gen, step_index: int, view, distribution) -> None:
    """Layer and head pickers; the next-token chart beside the newest token's cross-attention
    over the source; then its self-attention over the output so far."""
    cfg = loaded.model.dec_cfg
    step = gen.steps[step_index]
    view.setdefault("layer", cfg.n_layers - 1)
    view.setdefault("head", 0)
    cols = st.columns(2)
    layer = index_slider(cols[0], "Decoder layer", cfg.n_layers, view.key("layer"),
                         help="For the two attention charts: which layer of the decoder.")
    head = index_slider(cols[1], "Head", cfg.n_heads, view.key("head"))
    row = st.container(horizontal=True, gap="small")  # side by side, or one under the other
    with row.container(width=CHART_PX[0]):
        distribution(loaded, gen, step_index)
    with row.container(width=CHART_PX[1]):
        fig = _cross_figure(gen, step_index, layer, head)
        st.plotly_chart(fig, key="gen_cross", config=chart_config(
            "generation-cross-attention", fig, layer=layer, head=head))
    keys = gen.ids[:step.position + 1]
    tokens = loaded.tokenizer.tokens(keys)
    with st.container(width=CHART_PX[1]):
        fig = attention_row_figure(tokens, step.attention[layer, head].numpy(), 0, 1,
                                   title=f"Layer {layer}, head {head}: where it looked in the "
                                   "output so far", subtitle="blue: the start token; orange: "
                                   "written by the model; outlined: the token itself")
        st.plotly_chart(fig, key="gen_attention", config=chart_config(
            "generation-attention", fig, layer=layer, head=head))
    reader = md_escape(visible_text(tokens[-1], looks_byte_level(tokens)))
    st.caption(f"To choose step {step_index + 1}'s token the decoder read its output up to "
               f"“{reader}” (position {step.position}): its self-attention (above) covers only "
               "that output so far (the causal mask hides what is not written yet), and its "
               "cross-attention covers the whole source, which the encoder read once.")


def _output_so_far(tok, gen, step: int) -> None:
    """The decoder's output up to step `step` (from 1), that step's token marked."""
    pieces = [tok.decode([i]) for i in gen.new_ids]
    shown = visible_text(pieces[step - 1])
    word = f"**{md_escape(shown)}**"
    if not set("[]\\") & set(shown):  # a bracket would end the badge early
        word = f":orange-badge[{word}]"
    st.markdown(md_escape("".join(pieces[:step - 1])).replace("\n", "  \n") + word)


def render_seq2seq(selection, view, controls, step_slider, distribution) -> None:
    """The whole page for an encoder–decoder, after the title and the sidebar's run."""
    loaded = selection.model
    st.caption(
        "This model is an encoder–decoder. The encoder reads the text in the sidebar (the "
        "source) once. The decoder then writes its own text one token at a time: it reads what "
        "it has written so far and, through cross-attention, the source; gives every token of "
        "its vocabulary a probability of coming next; picks one; and reads again.")
    d = apply_config_defaults(view, loaded, selection.model_name, loaded.cfg.d_vocab)
    n_new, sampling = controls(loaded.cfg.d_vocab)
    start = seq2seq_start(loaded, d)
    st.caption(config_note(loaded, d, start))
    src, left_out = source_window(loaded, selection.text)
    if left_out:
        st.warning(f"The source is {len(src) + left_out:,} tokens long; the encoder reads its "
                   f"first {len(src):,} here.")
    gen = seq2seq_generation(selection.model_name, tuple(src), n_new, sampling, start)
    if not gen.steps:
        st.info(FULL_BEFORE_FIRST)
        return
    step = step_slider(len(gen.steps))
    tok = loaded.tokenizer
    st.caption("The output so far, with this step's new token marked:")
    _output_so_far(tok, gen, step)
    if step == 1 and gen.forced_first:
        st.caption("This first token was forced by generation_config.json; the bars still show "
                   "what the model itself would have chosen.")
    attention_views(loaded, gen, step - 1, view, distribution)
    st.subheader("The source and the whole output")
    st.code(tok.decode(gen.source_ids), language=None, wrap_lines=True)
    st.code(tok.decode(gen.new_ids), language=None, wrap_lines=True)
    stop = gen.why_stopped
    if not gen.stopped_at_end and len(gen.steps) < n_new:
        stop = (f"Stopped after {len(gen.steps)} new tokens: the decoder reads at most "
                f"{loaded.model.dec_cfg.n_ctx} tokens.")
    st.caption(stop)


def seq2seq_figure(selection, view, attention: bool, chosen, step_of, distribution) -> None:
    """A lesson step's one figure on the Generate page for an encoder–decoder: the output so
    far with the step's token marked, then the likeliest next tokens, or (`attention`) where
    the newest token looked in the source. The page's own pieces are passed in: its settings
    read (`chosen`), its step brought into range (`step_of`) and its next-token chart."""
    loaded = selection.model
    cfg = loaded.model.dec_cfg
    d = apply_config_defaults(view, loaded, selection.model_name, loaded.cfg.d_vocab)
    src, _ = source_window(loaded, selection.text)
    gen = seq2seq_generation(selection.model_name, tuple(src), *chosen(loaded.cfg.d_vocab),
                             seq2seq_start(loaded, d))
    if not gen.steps:
        st.info(FULL_BEFORE_FIRST)
        return
    step = step_of(len(gen.steps))
    _output_so_far(loaded.tokenizer, gen, step)
    if not attention:
        distribution(loaded, gen, step - 1)
        return
    layer = min(max(int(view.setdefault("layer", cfg.n_layers - 1)), 0), cfg.n_layers - 1)
    head = min(max(int(view.setdefault("head", 0)), 0), cfg.n_heads - 1)
    fig = _cross_figure(gen, step - 1, layer, head)
    st.plotly_chart(fig, key="gen_cross", config=chart_config(
        "generation-cross-attention", fig, layer=layer, head=head))
