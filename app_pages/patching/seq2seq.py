"""The patching page for an encoder–decoder (BART, Marian, T5): the clean source is the
sidebar's text, the corrupted source the same with one word changed (same number of tokens);
the decoder reads the output the model wrote for the clean source in both runs. Grids: the
encoder's residual stream, the decoder's residual stream, every self- and cross-attention head
of the decoder (analysis/seq2seq_patching.py)."""

from __future__ import annotations

import streamlit as st

from analysis.cost import seq2seq_patching_plan
from analysis.patching import MAX_PATCH_TOKENS
from analysis.seq2seq_patching import (MAX_OUT_TOKENS, decoder_head_patching,
                                       decoder_residual_patching, encoder_residual_patching,
                                       prepare_seq2seq)
from ui.cache import cached_run, get_model, shared
from ui.charts import chart_config
from ui.heavy import allowance, cost_words, refusal, room_for
from ui.patching_inputs import default_corruption, follow_default, token_count
from ui.text import md_escape
from viz.heads import head_grid
from viz.labels import looks_byte_level, visible_text
from viz.patching import position_labels, residual_grid

from .notes import clean_prompt, mismatch

AUTO_WORK = 40_000  # patched runs × tokens below which the grids run without a click
RECOVERED = ("Each cell: how much of the clean answer comes back when that one piece of the "
             "corrupted run is put back from the clean run (0 = as corrupted, 1 = as clean).")


def _plan(loaded, n_src: int, n_out: int):
    return seq2seq_patching_plan(loaded.cfg, loaded.model.dec_cfg, n_src, n_out, allowance())


@shared("seq2seq_patching")
def _patch(model_name: str, clean: str, corrupted: str, dec_ids: tuple, _bar) -> dict:
    loaded = get_model(model_name)
    a, b = (loaded.encode(t).input_ids[0] for t in (clean, corrupted))
    dec_cfg = loaded.model.dec_cfg
    with room_for(_plan(loaded, a.numel(), len(dec_ids))) as held:
        p = prepare_seq2seq(loaded, a, b, list(dec_ids))
        n_enc = (loaded.cfg.n_layers + 1) * p.n_src
        n_heads = 2 * dec_cfg.n_layers * dec_cfg.n_heads
        total = n_enc + n_heads + (dec_cfg.n_layers + 1) * (p.position + 1)

        def bar(before: int):
            return lambda d, _t: _bar.progress((before + d) / total,
                                               text=f"{before + d}/{total} patches")

        encoder = encoder_residual_patching(p, bar(0), allowance=held)
        own, cross = decoder_head_patching(p, bar(n_enc), allowance=held)
        decoder = decoder_residual_patching(p, bar(n_enc + n_heads), allowance=held)
    tok = loaded.tokenizer
    return dict(encoder=encoder, decoder=decoder, own=own, cross=cross,
                clean_tokens=tok.tokens(a.tolist()), corrupted_tokens=tok.tokens(b.tolist()),
                dec_tokens=tok.tokens(list(dec_ids)), position=p.position, answer=p.answer,
                wrong=p.wrong, clean_value=p.clean_value, corrupted_value=p.corrupted_value)


def letter_changed(loaded, text: str) -> str:
    """The text with one letter changed (from the middle out) so that it keeps its number of
    tokens: a default for a model that reads letters (tiny-reverse); "" when none does."""
    n = token_count(loaded, text)
    middle = len(text) // 2
    for i in sorted(range(len(text)), key=lambda i: abs(i - middle)):
        if not text[i].isalpha():
            continue
        for other in "aeioutsnrl":
            if other != text[i].lower():
                candidate = text[:i] + other + text[i + 1:]
                if token_count(loaded, candidate) == n:
                    return candidate
    return ""


def _rows(n_layers: int, stack: str) -> list[str]:
    return [f"into {stack} layer {i}" for i in range(n_layers)] + \
        [f"out of {stack} layer {n_layers - 1}"]


def _metric_line(r: dict, tok) -> str:
    byte_level = looks_byte_level(r["dec_tokens"])
    a, w = (md_escape(visible_text(t, byte_level))
            for t in tok.tokens([r["answer"], r["wrong"]]))
    at = md_escape(visible_text(r["dec_tokens"][r["position"]], byte_level))
    return (f"Metric: logit(“{a}”) − logit(“{w}”) after decoder position {r['position']} "
            f"(“{at}”), where the two sources change the decoder's scores most: "
            f"{r['clean_value']:.3f} with the clean source, {r['corrupted_value']:.3f} with the "
            "corrupted one.")


def _encoder_grid(r: dict, loaded) -> None:
    cfg = loaded.cfg
    byte_level = looks_byte_level(r["clean_tokens"])
    labels = position_labels(r["clean_tokens"], r["corrupted_tokens"], byte_level)
    differ = [i for i, (a, b) in enumerate(zip(r["clean_tokens"], r["corrupted_tokens"]))
              if a != b]
    fig = residual_grid(r["encoder"], labels, _rows(cfg.n_layers, "encoder"),
                        title="Metric recovered, patching the encoder",
                        subtitle="rows = where in the encoder; columns = source tokens",
                        marked_cols=differ)
    st.plotly_chart(fig, key="pt_s2s_encoder", config=chart_config("patching_encoder"))


def _head_grids(r: dict) -> None:
    """The decoder's self- and cross-attention heads, on one colour scale."""
    row = st.container(horizontal=True, gap="small")  # side by side, or one under the other
    top = float(max(abs(r["own"]).max(), abs(r["cross"]).max(), 1e-12))
    for grid, title, key in ((r["own"], "Self-attention heads", "pt_s2s_own"),
                             (r["cross"], "Cross-attention heads", "pt_s2s_cross")):
        fig = head_grid(grid, title=title, value_name="recovered", diverging=True,
                        subtitle="rows = decoder layers, columns = heads; one colour scale")
        fig.data[0].update(zmin=-top, zmax=top)
        row.container(width=460).plotly_chart(fig, key=key,
                                              config=chart_config(key.replace("_", "-")))


def _grids(r: dict, loaded) -> None:
    dec_cfg = loaded.model.dec_cfg
    st.markdown(f"**The encoder's residual stream**, at each layer and source token. "
                f"{RECOVERED} At the top only the changed tokens can matter; lower down the "
                "encoder has spread what they mean over the other positions.")
    _encoder_grid(r, loaded)
    dec_labels = position_labels(r["dec_tokens"], r["dec_tokens"],
                                 looks_byte_level(r["dec_tokens"]))
    st.markdown("**The decoder's residual stream**, at each layer and output token. The "
                "decoder reads the same output in both runs, so its first row changes "
                "nothing: the source reaches it only through cross-attention.")
    fig = residual_grid(r["decoder"], dec_labels, _rows(dec_cfg.n_layers, "decoder"),
                        title="Metric recovered, patching the decoder",
                        subtitle="rows = where in the decoder; columns = output tokens; "
                        "outlined: where the metric is read", marked_pos=r["position"])
    fig.update_xaxes(title_text="output token (the same in both runs)")
    st.plotly_chart(fig, key="pt_s2s_decoder", config=chart_config("patching_decoder"))
    st.markdown("**Every decoder head.** One head's output (at every output token) put back "
                "from the clean run. Cross-attention heads read the source; a self-attention "
                "head can only pass on what cross-attention brought in before it.")
    _head_grids(r)


def _corruption(loaded, view, clean: str, limit: int) -> str:
    """The corrupted source in the session: a link's or a lesson's, else one made here (which
    it follows until the user edits it)."""
    made = default_corruption(loaded, clean, limit) or letter_changed(loaded, clean)
    view.setdefault("corrupt", made)
    follow_default(view.key("corrupt"), "_pt_default", made)
    return view["corrupt"]


def render_seq2seq_patching(selection, view) -> None:
    loaded = selection.model
    st.caption("This model is an encoder–decoder, so the two prompts are two sources for the "
               "encoder: your text (clean) and the same with a word changed (corrupted). The "
               "decoder reads the output the model wrote for your text in both runs. The "
               "induction preset is for decoders that continue a text, so it is not offered.")
    limit = min(MAX_PATCH_TOKENS, loaded.cfg.n_ctx)
    clean = clean_prompt(selection, loaded, limit)
    if clean is None:
        return
    _corruption(loaded, view, clean, limit)
    corrupted = st.text_input("Corrupted source (same number of tokens, one small change)",
                              key=view.key("corrupt"), max_chars=2_000,
                              help="By default your text with one word swapped.")
    if not corrupted.strip():
        st.info("Type a corrupted source: the sidebar text with a word changed.")
        return
    n_clean, n_corrupt = token_count(loaded, clean), token_count(loaded, corrupted)
    st.caption(f"Clean: {n_clean} tokens · corrupted: {n_corrupt} tokens.")
    if n_clean != n_corrupt:
        mismatch(loaded, clean, corrupted, n_clean, n_corrupt)
        return
    r = _patched(selection, clean, corrupted, n_clean)
    if r is not None:
        st.caption(_metric_line(r, loaded.tokenizer))
        _grids(r, loaded)


def _patched(selection, clean: str, corrupted: str, n_clean: int) -> dict | None:
    """Every cell patched, after a click when the work is large (its cost said above the
    button); None until then, when it cannot fit this server, or with a warning."""
    loaded = selection.model
    dec = cached_run(selection.model_name, clean).decoder_ids[0][:MAX_OUT_TOKENS].tolist()
    cfg, dec_cfg = loaded.cfg, loaded.model.dec_cfg
    work = ((cfg.n_layers + 1) * n_clean + (dec_cfg.n_layers + 1) * len(dec)
            + 2 * dec_cfg.n_layers * dec_cfg.n_heads) * (n_clean + len(dec))
    plan = _plan(loaded, n_clean, len(dec))
    why = refusal(plan)
    if why:  # even its smallest pieces never fit this server: nothing to click
        st.info(why)
        return None
    key = (selection.model_name, clean, corrupted)
    if work > AUTO_WORK and st.session_state.get("_pt_s2s_ran") != key:
        st.caption(f"Patching every cell takes {cost_words(plan)}.")
        if not st.button("Patch every cell", key="pt_s2s_run", type="primary"):
            return None
    st.session_state["_pt_s2s_ran"] = key
    bar = st.empty()
    try:
        return _patch(selection.model_name, clean, corrupted, tuple(dec), bar)
    except ValueError as exc:
        st.warning(md_escape(str(exc)))
        return None
    finally:
        bar.empty()


def seq2seq_patching_figure(selection, view, name: str) -> None:
    """A lesson step's one figure (app_pages/patching/page.py: figure), for the session's corrupted
    source: the decoder's heads, or the encoder's layers and positions; no controls."""
    loaded = selection.model
    limit = min(MAX_PATCH_TOKENS, loaded.cfg.n_ctx)
    clean = clean_prompt(selection, loaded, limit)
    if clean is None:
        return
    corrupted = _corruption(loaded, view, clean, limit)
    n_clean, n_corrupt = token_count(loaded, clean), token_count(loaded, corrupted)
    if not corrupted.strip() or n_clean != n_corrupt:
        mismatch(loaded, clean, corrupted, n_clean, n_corrupt)
        return
    r = _patched(selection, clean, corrupted, n_clean)
    if r is not None and name == "stream":
        _encoder_grid(r, loaded)
    elif r is not None:
        _head_grids(r)
