"""Embeddings: the embedding sum taken apart, token vectors projected layer by layer (PCA,
t-SNE, UMAP), and one head's queries and keys in one space."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from analysis.projection import (
    MAX_POINTS, ProjectionRefused, check_size, embedding_parts, joint_qk, project_layers,
    query_key_vectors, token_points,
)
from ui.cache import get_model, shared
from ui.model_names import NAMES
from ui.sidebar import require_trace
from ui.charts import chart_config
from ui.text import md_escape
from ui.view_state import page_view
from analysis.walkthrough.steps import plural
from ui.widgets import index_slider, shown_model_name
from viz.labels import axis_labels, looks_byte_level, plain_text, visible_text
from viz.projection import (
    joint_qk_figure, length_of, norms_figure, parts_figure, projection_figure,
)

VIEW = page_view("embeddings")  # this page's settings (teaching/pages.py declares them)
MAX_SENTENCES = 20  # "several sentences" mode: lines beyond this are ignored, and we say so
MAX_LINE_CHARS = 300  # each line is cut to this many characters
EXAMPLE_SENTENCES = (
    "She sat on the bank of the river.\nThe bank raised its interest rates.\n"
    "He fished from the muddy river bank.\nI paid the cheque into my bank account.\n"
    "The cat sat on the mat.\nA dog chased the ball across the park.")
SOURCES = ("The text in the sidebar", "Several sentences (one per line)")


SCROLL_ROWS = 10  # a data frame shows about this many rows before it scrolls


def _config() -> dict:
    """The figures' toolbar: it saves the format chosen in the sidebar now."""
    return chart_config("embeddings")


def _resid(name: str) -> bool:
    return "hook_resid" in name


@shared("sentences")
def _sentences_trace(model_name: str, lines: tuple[str, ...]):
    """All lines as one padded batch; only the residual stream is kept."""
    with st.spinner("Running the sentences…"):
        return get_model(model_name).run(list(lines), keep=_resid)


@shared("projection")
def _projection(_states: np.ndarray, key: tuple, method: str, k: int, layer: int | None):
    """(coords, PCA's explained shares or None); `key` names the texts behind `_states`."""
    return project_layers(_states, method, k, layer=layer)


def _clamp(key: str, high: int, default: int = 0) -> None:
    value = st.session_state.get(key, default)
    st.session_state[key] = min(max(int(value), 0), high)


def _shapes_line(parts) -> str:
    """"token [1, 9, 384] + ... = sum [1, 9, 384] → LayerNorm → [1, 9, 384]", real shapes."""
    def shape(hook):
        return "[" + ", ".join(str(d) for d in parts.shapes[hook]) + "]"
    added = [f"{name} `{shape(parts.hooks[name])}`" for name in parts.parts]
    line = " + ".join(added)
    if len(parts.parts) > 1:
        line += f" = sum `{shape(parts.hooks['sum'])}`"
    if parts.normed is not None:
        line += f" → LayerNorm → `{shape(parts.hooks['after LayerNorm'])}`"
    return line + "  (texts, positions, numbers per token)"


def _sum_words(parts, cfg, name: str) -> str:
    """What this model's embedding adds up, in plain words: only the parts it really has."""
    words = [f"Each token's id picks one row of a large table that {name} learned: the "
             "token's vector."]
    added = []
    if "token type" in parts.parts:
        added.append("a row that says which sentence the token is in (the first or the "
                     "second: its token type)")
    if "position" in parts.parts:
        added.append("a row for its position in the text" + (
            " (a fixed pattern of waves, not learned)" if cfg.positions == "sinusoidal" else ""))
    if added:
        words.append("To it, the model adds " + " and ".join(added) + ".")
    if cfg.positions == "rotary":
        words.append("The model adds no position row: it brings in word order later, inside "
                     "attention, by turning each query and key by an angle set by its "
                     "position.")
    if parts.normed is not None:
        words.append("Then LayerNorm rescales the sum: each token's numbers are shifted and "
                     "scaled to average 0 and spread 1, then a learned gain and bias apply.")
    return " ".join(words) + " With your text:"


def _token(labels: list[str]) -> int:
    """The token whose parts are drawn: the one picked on the page, else the second one."""
    _clamp("emb_token", len(labels) - 1, 1 if len(labels) > 1 else 0)
    return st.session_state["emb_token"]


def _parts(parts, labels: list[str], i: int) -> None:
    """Token `i`'s parts, its sum and, where the model has one, the sum after LayerNorm,
    number by number."""
    rows = dict(parts.parts, sum=parts.total)
    if parts.normed is not None:
        rows["after LayerNorm"] = parts.normed
    st.plotly_chart(parts_figure(
        np.stack([v[i] for v in rows.values()]), list(rows),  # [part, d_model]
        f"Token {plain_text(labels[i])}: every vector, dimension by dimension",
        "each column of 'sum' adds up the column above it"
        + ("; the LayerNorm row's larger values are clipped to the same colours"
           if parts.normed is not None else ""),
        scale_rows=len(parts.parts) + 1),
        key="emb_parts", config=_config())


def _lengths(parts, labels: list[str]) -> dict:
    """Each part's length, token by token; returns them, by part."""
    norms = parts.norms()
    st.plotly_chart(norms_figure(norms, labels, "Lengths of the vectors, token by token",
                                 "a vector's length: the square root of the sum of its "
                                 "squared numbers"
                                 + ("; LayerNorm scales each sum to spread 1, then applies a "
                                    "learned gain and bias" if parts.normed is not None else "")),
                    key="emb_norms", config=_config())
    return norms


def _embedding_sum(selection, trace, model_name: str) -> None:
    """1. The embedding sum, taken apart: its parts, their lengths, and the ids behind them."""
    lm, cfg = selection.model, trace.cfg
    labels = axis_labels(trace.tokens)
    st.header("The embedding sum, taken apart")
    parts = embedding_parts(trace)
    st.markdown(_sum_words(parts, cfg, model_name))
    st.markdown(_shapes_line(parts))
    if len(parts.parts) > 1:
        recomputed = sum(parts.parts.values())  # [pos, d_model], in the model's order
        gap = float(np.abs(recomputed - parts.total).max())
        st.caption("Adding the parts again gives the sum the model itself computed "
                   + ("exactly." if gap == 0 else f"to within {gap:.1e}."))
        with st.expander("For the curious: where these vectors are read"):
            st.markdown("Read inside the model with hooks: "
                        + ", ".join(f"{part} `{hook}`" for part, hook in parts.hooks.items()) + ".")
    _token(labels)
    i = st.selectbox("Token", range(len(labels)), key="emb_token",
                     format_func=lambda j: plain_text(labels[j]))
    _parts(parts, labels, i)
    norms = _lengths(parts, labels)
    embed = lm.model.embed
    pos_ids = (embed.position_ids(trace.input_ids)[0] if hasattr(embed, "position_ids")
               else np.arange(trace.n_tokens))
    byte_level = looks_byte_level(trace.tokens)
    columns = {"token": [visible_text(t, byte_level) for t in trace.tokens],
               "token id": trace.input_ids[0].tolist()}
    if cfg.n_token_types:  # only models with sentence A / B rows have a type id
        columns["token type id"] = trace.token_type_ids[0].tolist()
    if cfg.positions != "rotary":  # a rotary model adds no position row
        columns["position id"] = [int(p) for p in pos_ids]
    table = pd.DataFrame(columns)
    for name, values in norms.items():
        table[length_of(name)] = np.round(values, 3)
    # every length with 3 decimals ("7.190" under "8.703", not "7.19"), so a column reads as one
    st.dataframe(table, hide_index=True, key="emb_table", column_config={
        length_of(name): st.column_config.NumberColumn(format="%.3f") for name in norms})
    if len(table) > SCROLL_ROWS:  # the table scrolls inside itself: say that it holds them all
        st.caption(f"All {len(table)} tokens; scroll the table to see them all.")


def _points(selection, trace, source: str) -> tuple[list, object, tuple]:
    """The tokens to place: the sidebar text's, or several sentences' (typed here); the key
    names them."""
    if source == SOURCES[1]:
        st.session_state.setdefault("emb_sentences", EXAMPLE_SENTENCES)
        raw = st.text_area(f"Sentences, one per line (up to {MAX_SENTENCES} lines of "
                           f"{MAX_LINE_CHARS} characters)", key="emb_sentences", height=160)
        lines = [line.strip()[:MAX_LINE_CHARS] for line in raw.splitlines() if line.strip()]
        if len(lines) > MAX_SENTENCES:
            st.warning(f"Only the first {MAX_SENTENCES} of {len(lines)} lines are used.")
            lines = lines[:MAX_SENTENCES]
        if not lines:
            st.info("Type at least one sentence; meanwhile this shows the text in the sidebar.")
    if source == SOURCES[1] and lines:
        points = token_points(_sentences_trace(selection.model_name, tuple(lines)))
        data_key = (selection.model_name, "lines", tuple(lines))
    else:
        lines = []
        points = token_points(trace)
        data_key = (selection.model_name, "text", selection.text, selection.pair)
    return lines, points, data_key


def _point_labels(points, lines: list) -> list[str]:
    """A label per token; with several sentences, which one it is from (s1, s2...)."""
    point_labels = []
    for s in sorted(set(points.sentence.tolist())):
        mask = points.sentence == s
        sent_labels = axis_labels([t for t, m in zip(points.tokens, mask) if m])
        point_labels += [f"s{s + 1} {lab}" if lines else lab for lab in sent_labels]
    return point_labels


def _projections(selection, trace, model_name: str) -> None:
    """2. Every token's vector after each block, squeezed to 2 or 3 numbers."""
    cfg = trace.cfg
    st.header("Where tokens live: projections layer by layer")
    st.caption(f"Each token's vector ({cfg.d_model} numbers for {model_name}) after the "
               "embedding (layer 0) and after each block, squeezed to 2 or 3 numbers so it can be "
               "drawn. PCA keeps the directions in which the tokens differ most (PC1 first; the "
               "% says how much of the differences each direction shows) and is exact and "
               "repeatable; t-SNE and UMAP keep neighbours together but bend distances, and "
               "depend on a random seed (fixed here). Points too close to name on the plot are "
               "named on hover.")
    cols = st.columns([3, 2, 2, 3])
    source = cols[0].radio("Tokens of", SOURCES, key="emb_source")
    for name in ("method", "dims"):
        VIEW.setdefault(name)
    method = cols[1].radio("Method", ["PCA", "t-SNE", "UMAP"], key=VIEW.key("method"))
    dims = cols[2].radio("Dimensions", ["2D", "3D"], key=VIEW.key("dims"), horizontal=True)
    fit_all = cols[3].radio("Fit", ["all layers in one space", "each layer alone"],
                            key="emb_fit", help="One space for all layers lets you follow a token "
                            "from layer to layer.") == "all layers in one space"
    lines, points, data_key = _points(selection, trace, source)
    n_layers, n_points = points.states.shape[:2]
    VIEW.setdefault("layer")
    layer = index_slider(st, "Layer: 0 is the embeddings, 1 the output of the first block, 2 of "
                         "the second, and so on", n_layers, key=VIEW.key("layer"))
    color_modes = ["position", "token"] + (["sentence"] if lines else [])
    if st.session_state.get("emb_color") not in color_modes:
        st.session_state["emb_color"] = "position"
    color_mode = st.radio("Colour by", color_modes, key="emb_color", horizontal=True)
    point_labels = _point_labels(points, lines)
    path_point = None
    if not fit_all:
        st.caption("To follow one token from layer to layer, fit all layers in one space.")
    else:
        options = [None] + list(range(n_points))
        if st.session_state.get("emb_path") not in options:
            st.session_state["emb_path"] = None
        path_point = st.selectbox("Follow one token through the layers", options, key="emb_path",
                                  format_func=lambda j: "(none)" if j is None
                                  else plain_text(point_labels[j]))

    _projection_figure(points, point_labels, data_key, (method, 3 if dims == "3D" else 2),
                       layer, fit_all, color_mode, path_point)


def _projection_figure(points, point_labels: list[str], data_key: tuple, how: tuple[str, int],
                       layer: int, fit_all: bool, color_mode: str = "position",
                       path_point: int | None = None, bounds: bool = True) -> None:
    """The tokens' vectors after block `layer` (0: the embeddings), squeezed by `how` (method,
    2 or 3 numbers), fitted on all layers or this one; the methods' bounds above it."""
    method, k = how
    n_layers, n_points = points.states.shape[:2]
    n_fit = n_points * (n_layers if fit_all else 1)
    coords = explained = None
    try:
        check_size(method, n_fit)
        with st.spinner(f"Running {method} on {n_fit:,} points…"):
            coords, explained = _projection(points.states, data_key, method, k,
                                            None if fit_all else layer)
    except ProjectionRefused as exc:
        st.warning(str(exc))
    if bounds:
        st.caption(f"Bounds: t-SNE up to {MAX_POINTS['t-SNE']:,} points, UMAP up to "
                   f"{MAX_POINTS['UMAP']:,} points (this view: {n_points:,} tokens × "
                   f"{plural(n_layers if fit_all else 1, 'layer')} = {n_fit:,}); several "
                   f"sentences up to {MAX_SENTENCES} lines. PCA has no bound.")
    if coords is not None:
        shown = coords[layer] if fit_all else coords  # [point, k]
        if explained is not None:
            axes = [f"PC{j + 1} ({100 * explained[j]:.1f}%)" for j in range(k)]
        else:
            axes = [f"{method} {j + 1}" for j in range(k)]
        bytes_ = looks_byte_level(points.tokens)
        color = {"position": points.positions,
                 "token": [visible_text(t, bytes_) for t in points.tokens],
                 "sentence": [f"sentence {s + 1}" for s in points.sentence]}[color_mode]
        path = names = None
        if path_point is not None:
            path = coords[:, path_point]  # [layer, k]
            names = [f"L{j}" for j in range(n_layers)]
        where = "embeddings" if layer == 0 else f"after block {layer}"
        st.plotly_chart(projection_figure(
            shown, point_labels, color, color_mode, f"{method} of {n_points:,} tokens, layer "
            f"{layer} ({where})", "one space fitted on all layers" if fit_all
            else "fitted on this layer alone", categorical=color_mode != "position",
            axis_titles=axes, path=path, path_names=names,
            path_title="path of " + plain_text(point_labels[path_point]) if path is not None
            else ""), key="emb_projection", config=_config())


def _queries_and_keys(trace, model_name: str) -> None:
    """3. One head's queries and keys in one picture."""
    cfg = trace.cfg
    labels = axis_labels(trace.tokens)
    st.header("Queries and keys in one space")
    st.caption(
        f"Each layer of {model_name} has {plural(cfg.n_heads, 'head')}: small units that each "
        "decide, for every token, which other tokens to look at. In a head, every token makes a "
        f"query (what it looks for) and a key (what it offers), {cfg.d_head} numbers each. "
        "Here one head's queries (red circles) and keys (blue diamonds) are squeezed into one "
        "picture, and a grey line joins each query to the key it looks at most."
        + (" The queries and keys are drawn after the turn by an angle that tells them their "
           "position, as the model uses them." if cfg.positions == "rotary" else ""))
    cols = st.columns([3, 3, 3])
    qk_layer = index_slider(cols[0], "Layer", cfg.n_layers, key="emb_qk_layer")
    qk_head = index_slider(cols[1], "Head", cfg.n_heads, key="emb_qk_head")
    balance = cols[2].toggle("Balance queries and keys", key="emb_qk_balance",
                             help="Shift the keys onto the queries' centre and give both the same "
                             "mean length. What each token looks at stays exactly the same.")
    q, kk, pattern = query_key_vectors(trace, qk_layer, qk_head)
    joint = joint_qk(q, kk, pattern, balance=balance)
    st.plotly_chart(joint_qk_figure(
        joint.q, joint.k, joint.top_key, labels, f"Layer {qk_layer}, head {qk_head}: "
        f"{len(labels)} queries and {len(labels)} keys",
        "balanced: keys moved onto the queries, what each token looks at unchanged" if balance
        else f"each token's query and key ({cfg.d_head} numbers each), as the model made them",
        axis_titles=[f"PC{j + 1} ({100 * joint.explained[j]:.1f}%)" for j in range(2)]),
        key="emb_qk", config=_config())
    if balance:
        st.caption("Moving every key by the same amount adds the same number to all of a "
                   "query's scores, and making the queries longer and the keys shorter by the same "
                   "factor changes no score at all: what each token looks at stays exactly the "
                   "same, but queries and keys now share one cloud.")


def render(selection) -> None:
    st.title("Embeddings", anchor=False)
    trace = require_trace(selection)
    model_name = md_escape(NAMES.get(selection.model_name, shown_model_name(selection.model_name)))

    # ------------------------------------------------------------------ 1. the embedding sum
    _embedding_sum(selection, trace, model_name)

    # -------------------------------------------------------------------- 2. projections
    _projections(selection, trace, model_name)

    # ------------------------------------------------------------ 3. queries and keys together
    _queries_and_keys(trace, model_name)


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py), in the step's view: the sidebar
    text's tokens as points after the step's layer, all layers fitted in one space
    ("projection"); one token's embedding parts ("parts"); or each part's length ("lengths")."""
    trace = require_trace(selection)
    if name in ("parts", "lengths"):
        parts, labels = embedding_parts(trace), axis_labels(trace.tokens)
        if name == "parts":
            _parts(parts, labels, _token(labels))
        else:
            _lengths(parts, labels)
        return
    points = token_points(trace)
    VIEW["layer"] = min(max(int(VIEW.setdefault("layer")), 0), points.states.shape[0] - 1)
    dims = VIEW.setdefault("dims")
    _projection_figure(points, _point_labels(points, []),
                       (selection.model_name, "text", selection.text, selection.pair),
                       (VIEW.setdefault("method"), 3 if dims == "3D" else 2), VIEW["layer"],
                       fit_all=True, bounds=False)
