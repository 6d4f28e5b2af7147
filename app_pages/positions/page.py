"""Positional encodings: the sinusoidal formula next to the loaded model's own positions
(a learned table, or rotary's rotations), their similarities, and what each costs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
import torch

from analysis.positions import (
    falls_with_distance, model_positions, position_similarity, rotary_inv_freq,
    rotary_qk_by_distance, similarity_by_distance, sinusoidal_frequencies, sinusoidal_table,
    wavelengths,
)
from analysis.projection import pca
from model.hook_names import hook_names
from ui.cache import shared
from ui.sidebar import require_trace
from ui.text import md_escape
from ui.score_links import heads_positions_drive
from ui.view_state import page_view
from ui.charts import chart_config
from ui.widgets import index_slider, shown_model_name
from viz.labels import axis_labels, plain_text
from viz.position_formulas import FORMULA, ROTARY_FORMULA
from viz.positions import (
    MAX_CURVES, dimension_curves, distance_curves, position_heatmap, position_pca_figure,
    rotary_distance_figure, similarity_heatmap, wavelength_figure,
)

from .relative import show_relative_bias

VIEW = page_view("positions")  # this page's settings (teaching/pages.py declares them)
MAX_POSITIONS = 512  # positions drawn at most (a 512 x 768 heatmap is ~1.5 MB in the page)
MAX_D_MODEL = 768
LABELS = {"learned": "learned table", "sinusoidal": "fixed sinusoidal table",
          "rotary": "rotary rotations"}  # the model's own positions, by kind


def _config() -> dict:
    """The figures' toolbar: it saves the format chosen in the sidebar now."""
    return chart_config("positions")


@dataclass(frozen=True)
class _Tables:
    """What the page's sections draw: the sinusoidal table beside the model's own."""

    sin: np.ndarray  # [pos, d_model]
    own: np.ndarray  # [pos, width]
    kind: str  # the model's own: "learned", "sinusoidal" or "rotary"
    label: str  # its kind, in words
    model_name: str
    n_pos: int  # rows of the sinusoidal table
    own_n: int  # rows of the model's own
    d_model: int  # width of the sinusoidal table


@shared("positions_sinusoidal")
def _sinusoidal(n_pos: int, d_model: int) -> np.ndarray:
    return sinusoidal_table(n_pos, d_model).numpy()  # [pos, d_model]


@shared("positions_own")
def _own_table(_model, model_name: str, n_pos: int) -> tuple[np.ndarray, str, str, int]:
    table = model_positions(_model.model, n_pos)
    return table.table.numpy(), table.kind, table.source, table.n_parameters


@shared("positions_similarity")
def _similarities(_table: np.ndarray, key: tuple, kind: str) -> tuple[np.ndarray, np.ndarray]:
    sim = position_similarity(torch.from_numpy(_table), kind)  # [pos, pos]
    return sim.numpy(), similarity_by_distance(sim).numpy()


def _sizes(cfg) -> tuple[int, int]:
    """The most positions the model's own table has here, and the table width to start at."""
    width = (cfg.rotary_dim or cfg.d_head) if cfg.positions == "rotary" else cfg.d_model
    return (MAX_POSITIONS if cfg.positions == "rotary" else min(MAX_POSITIONS, cfg.n_ctx),
            width if width % 2 == 0 and width <= MAX_D_MODEL else 128)


def _shown_dims(lo: int, hi: int, count: int) -> list[int]:
    return sorted({int(round(d)) for d in np.linspace(lo, hi, count)})


def _clamp(key: str, low: int, high: int, default) -> None:
    """Keep a widget's state inside its (possibly changed) range before the widget is drawn."""
    value = st.session_state.get(key, default)
    if isinstance(value, (tuple, list)):
        first, second = (min(max(int(v), low), high) for v in value)
        st.session_state[key] = (min(first, second), max(first, second))
    else:
        st.session_state[key] = min(max(int(value), low), high)


def _side_by_side(t: _Tables, cfg, dims: list) -> None:
    """The sinusoidal table beside the model's own, and a few of their dimensions as curves."""
    sin_table, own, own_kind, own_label, model_name, n_pos, own_n, d_model = (
        t.sin, t.own, t.kind, t.label, t.model_name, t.n_pos, t.own_n, t.d_model)
    freq = sinusoidal_frequencies(d_model).numpy()  # [d_model / 2]
    st.header("The tables, side by side")
    st.latex(FORMULA)
    st.caption("Dimension 2i holds the sine and 2i+1 the cosine of the same angle (d_model is "
               "the table's width). The angle turns once every 2π·10000^(2i/d_model) positions: "
               "about 6 positions at "
               "dimension 0, tens of thousands at the last ones. Positions run down, dimensions "
               "across.")
    VIEW.setdefault("grouped")
    grouped = st.toggle("Sines first, then cosines", key=VIEW.key("grouped"),
                        help="The formula interleaves sine (even) and cosine (odd) dimensions; "
                        "side by side, hundreds of thin columns blur. Grouping them shows each "
                        "half as one smooth picture. Hover still names the real dimension.")
    order = np.r_[0:d_model:2, 1:d_model:2] if grouped else np.arange(d_model)  # [d_model]
    # each pair side by side, one under the other on a narrow screen (ui/page_style.py)
    left, right = st.container(key="wide_pos_tables").columns(2)
    left.plotly_chart(position_heatmap(
        sin_table[:, order], f"Sinusoidal encoding: {n_pos} positions × {d_model} numbers",
        "computed from the formula; no parameters" + ("; sin columns, then cos" if grouped
                                                       else ""),
        dim_labels=order if grouped else None), key="pos_sin_heatmap", config=_config())
    if own_kind == "rotary":
        half = own.shape[1] // 2
        sub = (f"the model's own cos/sin of pos·θ_i: columns 0–{half - 1} cos, {half}–"
               f"{2 * half - 1} sin; no parameters")
    else:
        sub = (f"rows 0–{own_n - 1} of the model's learned weights" if own_kind == "learned"
               else f"rows 0–{own_n - 1} of the model's fixed table: computed, not learned")
        if own_n < n_pos:
            sub += f" (the table has only {cfg.n_ctx} rows)"
    right.plotly_chart(position_heatmap(own, f"{model_name}: {own_label}, {own_n} × "
                                        f"{own.shape[1]}", sub,
                                        dim_name="dimension" if own_kind != "rotary" else "column"),
                       key="pos_model_heatmap", config=_config())

    if own_kind == "sinusoidal":
        same = own.shape[1] == d_model and np.allclose(own, sin_table[:own_n], atol=1e-5)
        st.caption(f"{md_escape(model_name)} uses exactly this formula, so both sides match."
                   if same else f"{md_escape(model_name)} uses this formula with width "
                   f"{own.shape[1]}; set the width slider to {own.shape[1]} and both sides match.")
    left, right = st.container(key="wide_pos_curves").columns(2)
    names = [f"dim {d} ({'sin' if d % 2 == 0 else 'cos'}, {2 * np.pi / freq[d // 2]:,.1f} "
             "positions per turn)" for d in dims]
    left.plotly_chart(dimension_curves(sin_table, dims, "Sinusoidal: chosen dimensions",
                                       "higher dimensions change more slowly", names),
                      key="pos_sin_curves", config=_config())
    own_dims = [d for d in dims if d < own.shape[1]]
    if own_dims:
        right.plotly_chart(dimension_curves(own, own_dims, f"{model_name}: the same "
                                            "dimensions", own_label), key="pos_model_curves",
                           config=_config())
    else:
        right.info(f"The model's table has only {own.shape[1]} columns; choose lower dimensions.")


def _wavelengths(t: _Tables, lm, cfg) -> None:
    """How fast each dimension turns; for a rotary model, its own frequencies and formula."""
    own_kind, model_name, d_model = t.kind, t.model_name, t.d_model
    series = {f"sinusoidal, width {d_model}": (np.arange(0, d_model, 2), wavelengths(
        sinusoidal_frequencies(d_model)).numpy())}
    if own_kind == "rotary":
        inv = rotary_inv_freq(lm.model)  # [rotated dims / 2], the model's own buffer
        rotated = "" if 2 * len(inv) == cfg.d_head else f", {2 * len(inv)} of them rotated"
        series[f"{model_name}: rotary θ_i (base {cfg.rope_theta:g}, d_head "
               f"{cfg.d_head}{rotated})"] = (np.arange(0, 2 * len(inv), 2),
                                             wavelengths(inv).numpy())
    st.plotly_chart(wavelength_figure(
        series, "Higher dimensions turn more slowly",
        "positions per full turn of each sine/cosine pair, dimension 2i"), key="pos_wavelengths",
        config=_config())
    if own_kind == "rotary":
        same = d_model == cfg.d_head == 2 * len(inv) and np.allclose(
            sinusoidal_frequencies(d_model).numpy(), rotary_inv_freq(lm.model).numpy(), rtol=1e-5)
        if same:
            st.caption(f"With d_model = d_head = {d_model} the two curves coincide: this model's "
                       "rotary frequencies are exactly the sinusoidal ones.")
        st.latex(ROTARY_FORMULA)
        st.caption("Rotary models add no vector. Inside every attention layer, each pair of "
                   "components of q and k is rotated by pos·θ_i, with the frequencies θ_i above "
                   "(the model's own frequencies). A dot product of two rotated vectors depends "
                   "only on the distance m − n between their positions.")


def _principal_components(t: _Tables) -> None:
    """Each position's vector drawn along the directions in which positions differ most."""
    sin_table, own, own_kind, own_label, model_name, n_pos, own_n = (
        t.sin, t.own, t.kind, t.label, t.model_name, t.n_pos, t.own_n)
    st.header("Principal components of the position vectors")
    st.caption("Each position is one vector. PCA (principal component analysis) finds the "
               "directions in which the positions differ most and draws each position along them. "
               "Consecutive positions are joined by a line: a smooth curve means "
               "that neighbouring positions get similar vectors.")
    cols = st.columns(2)
    VIEW.setdefault("skip_first", own_kind == "learned")
    pca_3d = cols[0].toggle("3D", key="pos_pca_3d")
    skip_first = cols[1].toggle("Leave out position 0", key=VIEW.key("skip_first"),
                                help="BERT-style models give position 0 (always [CLS]) a vector "
                                "far from all the others; over a few positions it can fill a "
                                "whole axis on its own.")
    k = 3 if pca_3d else 2
    first = 1 if skip_first else 0
    left, right = st.container(key="wide_pos_pca").columns(2)
    fit = pca(sin_table[first:], k)
    left.plotly_chart(position_pca_figure(fit.coords, fit.explained, "Sinusoidal", f"positions "
                                          f"{first}–{n_pos - 1}", first=first),
                      key="pos_sin_pca", config=_config())
    fit = pca(own[first:], k)
    right.plotly_chart(position_pca_figure(fit.coords, fit.explained, f"{model_name}: "
                                           f"{own_label}", f"positions {first}–{own_n - 1}",
                                           first=first), key="pos_model_pca", config=_config())


def _similarity(t: _Tables, model_key: str) -> None:
    """Which positions are alike, in both tables, and how that falls with distance."""
    sin_table, own, own_kind, own_label, model_name, n_pos, own_n, d_model = (
        t.sin, t.own, t.kind, t.label, t.model_name, t.n_pos, t.own_n, t.d_model)
    st.header("Which positions are alike?")
    kind = st.radio("Similarity", ["cosine", "dot"], horizontal=True, key="pos_similarity",
                    format_func=lambda s: {"cosine": "cosine (angle only)",
                                           "dot": "dot product"}[s])
    sin_sim, sin_decay = _similarities(sin_table, ("sin", n_pos, d_model), kind)
    own_sim, own_decay = _similarities(own, (model_key, own_kind, own_n), kind)
    left, right = st.container(key="wide_pos_similarity").columns(2)
    left.plotly_chart(similarity_heatmap(sin_sim, f"Sinusoidal: position × position {kind}",
                                         cosine=kind == "cosine"), key="pos_sin_sim",
                      config=_config())
    right.plotly_chart(similarity_heatmap(own_sim, f"{model_name}: position × position "
                                          f"{kind}", own_label, cosine=kind == "cosine"),
                       key="pos_model_sim", config=_config())
    st.plotly_chart(distance_curves(
        {"sinusoidal": sin_decay, f"{model_name} ({own_label})": own_decay},
        f"Average {kind} similarity against distance",
        "the mean over all pairs of positions that far apart"), key="pos_decay", config=_config())
    near = ("Near it, positions are most alike; further away the similarity falls, which lets "
            "attention tell near from far.")
    if falls_with_distance(torch.from_numpy(own_decay)):
        st.caption(f"The diagonal is each position with itself. {near}")
    else:  # e.g. a model trained on random symbols: every position points its own way
        st.caption(f"The diagonal is each position with itself. In the sinusoidal table: {near} "
                   f"In {md_escape(model_name)}'s table, neighbours are about as unlike as "
                   "distant positions: each position has a direction of its own, so the model "
                   "can tell positions apart, but its table does not say which are near.")


def _rotary_qk(trace, lm, n_pos: int) -> None:
    """Rotary: one query and one key of the text, scored at growing distances."""
    cfg = trace.cfg
    st.header("Rotary: q·k against relative distance")
    labels = axis_labels(trace.tokens)
    _clamp("pos_query", 0, len(labels) - 1, len(labels) - 1)
    _clamp("pos_key", 0, len(labels) - 1, 0)
    cols = st.columns(4)
    layer = index_slider(cols[0], "Layer", cfg.n_layers, key="pos_layer")
    head = index_slider(cols[1], "Head", cfg.n_heads, key="pos_head")
    qi = cols[2].selectbox("Query from token", range(len(labels)), key="pos_query",
                           format_func=lambda i: plain_text(labels[i]))
    kj = cols[3].selectbox("Key from token", range(len(labels)), key="pos_key",
                           format_func=lambda i: plain_text(labels[i]))
    kv_head = head // (cfg.n_heads // cfg.n_kv_heads)
    # before rotation (after the per-head norm where the model has one: Qwen3, Gemma 3)
    names = hook_names(cfg)
    normed = names.norm(layer, "q_norm", required=False) in trace.cache
    q = trace.cache[names.norm(layer, "q_norm") if normed else names.attn(layer, "q")][
        0, head, qi]  # [d_head]
    kv = trace.cache[names.norm(layer, "k_norm") if normed else names.attn(layer, "k")][
        0, kv_head, kj]  # [d_head]
    curve = rotary_qk_by_distance(q, kv, lm.model, n_pos, layer).numpy()  # [n_pos]
    ones = torch.ones(cfg.d_head)  # [d_head]
    flat = rotary_qk_by_distance(ones, ones, lm.model, n_pos, layer).numpy()  # [n_pos]
    st.plotly_chart(rotary_distance_figure(
        {f"q of {plain_text(labels[qi])}, k of {plain_text(labels[kj])} (layer {layer}, "
         f"head {head})": curve,
         "q = k = all ones": flat},
        "The same two vectors, placed further and further apart",
        "the model rotates q by its position and k by its own; only the difference counts"),
        key="pos_rotary", config=_config())
    rq = trace.cache[names.attn(layer, "rot_q")][0, head, qi]  # [d_head]
    rk = trace.cache[names.attn(layer, "rot_k")][0, kv_head, kj]  # [d_head]
    dist = qi - kj
    real = float(rq @ rk)
    msg = (f"In your text these two tokens are {dist} positions apart: the model's q·k there "
           f"was {real:.4f}")
    msg += f"; the curve at distance {dist} gives {curve[dist]:.4f}." if 0 <= dist < n_pos \
        else " (the curve covers query positions at or after the key, as a causal model uses)."
    st.caption(msg)


def _costs(t: _Tables, lm, cfg, own_params: int) -> None:
    """What each way of giving positions costs, and where it enters the model."""
    own_kind, own_label, model_name = t.kind, t.label, t.model_name
    st.header("Encoding or embedding?")
    total = sum(p.numel() for p in lm.model.parameters())
    if own_kind == "learned":
        rows, width = (cfg.n_ctx + cfg.position_offset), cfg.d_model
        own_cost = f"{rows:,} × {width:,} = {own_params:,} ({100 * own_params / total:.2f}% of " \
                   f"the model's {total:,})"
        own_limit = f"{cfg.n_ctx:,} positions: there is no row for position {cfg.n_ctx:,}"
        own_where = "added to the token embedding, once, before the first layer"
    else:
        own_cost = "0: computed from a formula"
        own_limit = ("any length in principle; trained up to " if own_kind == "rotary"
                     else "the table is computed for ") + f"{cfg.n_ctx:,} positions"
        own_where = ("rotates q and k in every attention layer" if own_kind == "rotary"
                     else "added to the token embedding, once, before the first layer")
    tok_params = cfg.d_vocab * cfg.d_model
    st.table(pd.DataFrame({
        "sinusoidal encoding (formula)": [
            "0: computed from a formula", "any length: the formula works for every position",
            "added to the token embedding, once, before the first layer", "fixed"],
        f"{model_name} ({own_label})": [
            own_cost, own_limit, own_where, "trained with the model" if own_kind == "learned"
            else "fixed"],
    }, index=["parameters", "longest input", "where it enters", "learned?"]))
    st.markdown(
        "An **encoding** is computed, so it costs nothing and exists for every position; the "
        "model still has to learn to *use* positions it never saw in training. An **embedding** "
        "is a trained table, one row per position: it can learn whatever pattern helps, but it "
        f"ends where the table ends. For scale: the token-embedding table of this model is "
        f"{cfg.d_vocab:,} × {cfg.d_model:,} = {tok_params:,} numbers.")


def render(selection) -> None:
    st.title("Positional encodings", anchor=False)
    trace = require_trace(selection)
    lm, cfg = selection.model, trace.cfg
    model_key = selection.model_name
    model_name = shown_model_name(selection.model_name)  # a trained model by its label, no path
    name = md_escape(model_name)
    st.markdown(
        "Attention on its own ignores order: shuffle the tokens and every token gets the same "
        "mix back. A transformer therefore adds **where** each token is to **what** it is. The "
        "original transformer adds a fixed *encoding* computed from a formula; BERT and GPT-2 add "
        "a learned *embedding* (a trained table); Llama-style models *rotate* queries and keys "
        f"by an angle that grows with position. The loaded model, **{name}**, uses "
        f"**{cfg.positions}** positions.")
    if cfg.positions == "relative":  # T5: no position table, a bias per head and distance
        show_relative_bias(lm)
        return heads_positions_drive(selection, cfg.positions)
    own_max, d_default = _sizes(cfg)  # the controls
    VIEW.setdefault("n_positions", min(128, own_max))
    _clamp(VIEW.key("n_positions"), 2, MAX_POSITIONS, min(128, own_max))
    VIEW.setdefault("d_model", d_default)
    _clamp(VIEW.key("d_model"), 8, MAX_D_MODEL, d_default)
    _clamp("pos_n_curves", 1, MAX_CURVES, 4)
    cols = st.columns(3)
    n_pos = cols[0].slider("Number of positions", 2, MAX_POSITIONS, key=VIEW.key("n_positions"),
                           help=f"At most {MAX_POSITIONS} are drawn.")
    d_model = cols[1].slider("Table width", 8, MAX_D_MODEL, step=2,
                             key=VIEW.key("d_model"), help="How many numbers the sinusoidal "
                             "table has per position (its d_model). Defaults to the loaded model's "
                             "width (d_head for rotary models), so both tables share their axes.")
    n_curves = cols[2].slider("Curves shown", 1, MAX_CURVES, key="pos_n_curves")
    _clamp("pos_dims", 0, d_model - 1, (0, min(d_model - 1, 64)))
    dim_range = st.slider("Dimensions shown as curves (from, to)", 0, d_model - 1, key="pos_dims",
                          help="Low dimensions turn fast, high dimensions slowly.")
    dims = _shown_dims(dim_range[0], dim_range[1], n_curves)

    sin_table = _sinusoidal(n_pos, d_model)  # [pos, d_model]
    own_n = min(n_pos, own_max)
    own, own_kind, _source, own_params = _own_table(lm, model_key, own_n)  # [pos, width]
    own_label = LABELS[own_kind]
    t = _Tables(sin_table, own, own_kind, own_label, model_name, n_pos, own_n, d_model)

    # the sections: the two tables, wavelengths, principal components, similarity, rotary q·k
    # (a rotary model only), and what each kind of position costs
    _side_by_side(t, cfg, dims)
    _wavelengths(t, lm, cfg)
    _principal_components(t)
    _similarity(t, model_key)
    if own_kind == "rotary":
        _rotary_qk(trace, lm, n_pos)
    _costs(t, lm, cfg, own_params)
    heads_positions_drive(selection, cfg.positions)


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py): the cosine similarity of positions, by
    distance for both tables, or position × position for the model's own."""
    cfg, key = require_trace(selection).cfg, selection.model_name
    if cfg.positions == "relative":
        return show_relative_bias(selection.model)
    own_max, d_default = _sizes(cfg)
    n_pos = VIEW.setdefault("n_positions", min(128, own_max))
    d_model = VIEW.setdefault("d_model", d_default)
    own, kind, _, _ = _own_table(selection.model, key, min(n_pos, own_max))
    label, model_name = LABELS[kind], shown_model_name(key)
    sin = _similarities(_sinusoidal(n_pos, d_model), ("sin", n_pos, d_model), "cosine")
    mine = _similarities(own, (key, kind, len(own)), "cosine")
    if name != "similarity":
        return st.plotly_chart(distance_curves(
            {"sinusoidal": sin[1], f"{model_name} ({label})": mine[1]}, "Average cosine "
            "similarity against distance", "the mean over all pairs of positions that far apart"),
            key="pos_decay", config=_config())
    st.plotly_chart(similarity_heatmap(mine[0], f"{model_name}: position × position cosine",
                                       label, cosine=True), key="pos_model_sim", config=_config())
