"""Head statistics: one number per layer × head, on the user's text (or several texts)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import streamlit as st

from analysis.head_stats import (STATISTICS, StatTotals, pooled_statistics, special_tokens_in,
                                 trace_totals, unknown_token)
from analysis.induction import repeat_scores
from server import settings
from ui import projector
from ui.cache import get_model, shared
from ui.charts import chart_config
from ui.callbacks import open_chosen_head, pick_head
from ui.sidebar import require_trace
from ui.text import md_escape, shorten
from ui.view_state import page_view
from viz.heads import head_grid

VIEW = page_view("heads")
MAX_EXTRA_TEXTS = 8
FORMATS = {"entropy": ".2f", "distance": ".1f"}  # the shares use ".2f" too
TABLE_FORMATS = {"entropy": "%.2f", "distance": "%.1f"}  # the shares: percent, "26%"
HEAD_PX = 56  # one column names the head: "L5 H6"
SHARE_PX = 48  # room for "100%"
# Short column headers, so every column fits an 800 px screen with no sideways scroll (the
# header's tooltip and the caption above the table say the full name): the shares are
# "share of attention to ...".
HEADERS = {"entropy": ("Entropy", 65), "special": ("Spec", SHARE_PX),
           "first": ("First", 51), "punctuation": ("Punct", 51),
           "previous": ("Prev", SHARE_PX), "self": ("Self", SHARE_PX),
           "next": ("Next", SHARE_PX), "distance": ("Dist", SHARE_PX)}
# Table columns after the chosen statistic: first the ones the intro talks about, so they are
# the ones an 800 px screen shows without scrolling sideways.
TABLE_ORDER = ("previous", "self", "next", "distance", "special", "first", "punctuation",
               "entropy")


def unbroken(text: str) -> str:
    """`text` with each $formula$ in braces, ${formula}$: one unbreakable box. KaTeX would
    otherwise break it after "=" and leave "H_i =" at the end of a line."""
    return re.sub(r"\$([^$]+)\$", r"${\1}$", text)


@shared("head_totals")
def _main_totals(_trace, key: tuple) -> StatTotals:
    return trace_totals(_trace, unknown=unknown_token(get_model(key[0]).tokenizer))


@shared("head_totals_text")
def _text_totals(model_name: str, text: str) -> StatTotals:
    with st.spinner("Running the extra texts…"):
        loaded = get_model(model_name)
        trace = loaded.run(text, keep=lambda n: n.endswith("attn.hook_pattern"))
        return trace_totals(trace, unknown=unknown_token(loaded.tokenizer))


def _pick_and_define(cfg, names: list) -> None:
    """Open any head; what every statistic means."""
    # the button's label on one line: in projector mode its 22 px text needs half the page
    box, button = st.columns([1, 1] if projector.on() else [3, 1], vertical_alignment="bottom")
    heads = [(lay, h) for lay in range(cfg.n_layers) for h in range(cfg.n_heads)]
    box.selectbox("Or pick a head", heads, key="hs_open_head",
                  format_func=lambda lh: f"layer {lh[0]}, head {lh[1]}")
    button.button("Open on the attention page", key="hs_open_btn",
                  on_click=open_chosen_head("hs_open_head"))

    with st.expander("Definitions of every statistic"):
        for name in names:
            st.markdown(f"- **{STATISTICS[name][0]}**: {unbroken(STATISTICS[name][1])}")
        st.markdown("Rows that count: every real token (padding never does). $A_{ij}$ is the "
                    "attention of query $i$ on key $j$; each row sums to 1.")


# Two scores measured once per decoder on its own random test, not on the sidebar text:
# column -> (header, width, what it means in one plain sentence).
REPEAT_COLUMNS = {
    "Induction score": ("Induct", 51, "Induct: on random tokens written twice, the share of "
                        "attention a token in the second copy gives to the token that came "
                        "right after its earlier copy, the one that will come next."),
    "Previous-token score": ("Prev*", SHARE_PX, "Prev*: on the same random tokens, the "
                             "share of attention each token gives to the one just before it."),
}
REPEAT_LENGTH, REPEAT_SEQS = 20, 64  # like the patching page's scores


@shared("head_repeat_scores")
def _repeat_scores(model_name: str) -> dict[str, np.ndarray]:
    """Induction and previous-token scores of every head ([layer, head] each), from fresh random
    repeated sequences (analysis/induction.py); once per model, in the shared memory budget."""
    loaded = get_model(model_name)
    length = min(REPEAT_LENGTH, loaded.cfg.n_ctx // 2)
    with st.spinner("Measuring every head on random repeated tokens (once per model)…"):
        scores = repeat_scores(loaded.model, n_seqs=REPEAT_SEQS, length=length)
    return {"Induction score": scores["induction"].numpy(),
            "Previous-token score": scores["previous"].numpy()}


def _repeat_columns(selection, trace) -> dict[str, np.ndarray]:
    """The two scores for a decoder the engine runs; nothing for other models."""
    if not trace.cfg.causal or trace.kind != "transformer" or trace.cfg.n_ctx < 4:
        return {}
    try:
        return _repeat_scores(selection.model_name)
    except (ValueError, KeyError, RuntimeError):  # a model this test does not fit
        return {}


def _table(cfg, names: list, stats: dict, stat: str, label: str,
           repeat: dict | None = None) -> None:
    """Every statistic of every head, sortable, the chosen one first."""
    st.subheader("All statistics, sortable")
    shares = [n for n in TABLE_ORDER if n in names and n not in ("entropy", "distance")]
    targets = ", ".join(STATISTICS[n][0].removeprefix("To ") for n in shares)
    last_layer, last_head = cfg.n_layers - 1, cfg.n_heads - 1  # an example the model has
    st.caption(f"Head “L{last_layer} H{last_head}”: layer {last_layer}, head {last_head}. "
               + ", ".join(HEADERS[n][0] for n in shares)
               + f": the share (in %) of each row's attention that goes to, in order: {targets}. "
               "Dist: the mean distance in tokens. Entropy: in bits. Click a column header to "
               "sort; pick a head below to open it.")
    table = pd.DataFrame({"head": [f"L{lay} H{h}" for lay in range(cfg.n_layers)
                                   for h in range(cfg.n_heads)]})
    # The chosen statistic first; shares in percent ("26%" is narrower than "0.256").
    for name in [stat] + [n for n in TABLE_ORDER if n in names and n != stat]:
        table[STATISTICS[name][0]] = stats[name].reshape(-1) * (100 if name in shares else 1)
    for column, values in (repeat or {}).items():
        table[column] = values.reshape(-1) * 100
    table = table.sort_values(label, ascending=False, kind="stable").reset_index(drop=True)
    # No row selection: its checkbox column would push the last columns off a narrow screen;
    # "Or pick a head" below opens any head.
    st.dataframe(
        table, key="hs_table", hide_index=True, width="stretch",
        column_config={
            "head": st.column_config.TextColumn("head", width=HEAD_PX,
                                                help="L = layer, H = head"),
            **{STATISTICS[n][0]: st.column_config.NumberColumn(
                HEADERS[n][0], help=STATISTICS[n][0], width=HEADERS[n][1],
                format=TABLE_FORMATS.get(n, "%.0f%%")) for n in names},
            **{c: st.column_config.NumberColumn(REPEAT_COLUMNS[c][0], help=c, format="%.0f%%",
                                                width=REPEAT_COLUMNS[c][1]) for c in repeat or {}}},
    )
    if repeat:
        st.caption("The last two columns do not use your text: each head is measured once on "
                   "random tokens written twice. " + " ".join(
                       REPEAT_COLUMNS[c][2] for c in repeat))


def render(selection) -> None:
    st.title("Head statistics", anchor=False)
    trace = require_trace(selection)
    cfg = trace.cfg
    key = (selection.model_name, selection.text, selection.pair)
    specials = special_tokens_in(trace)
    # No "next" for a model that cannot look ahead; no "special" for a text with no special token
    # (a character model, GPT-2): that column would be all zeros.
    names = [n for n in STATISTICS if not (cfg.causal and n == "next")
             and not (n == "special" and not specials)]
    sink = (" or ".join(md_escape(t) for t in specials[:3]) if specials
            else "the first token")

    st.caption(
        "One number per head, so you can scan all "
        f"{cfg.n_layers} × {cfg.n_heads} = {cfg.n_layers * cfg.n_heads} heads at once and find the "
        "ones worth opening: heads that look at the previous token, heads that park their "
        f"attention on {sink}, heads that spread it evenly. Each statistic is computed per query "
        "token (row) and averaged over the rows.")

    if VIEW.setdefault("stat") not in names:  # e.g. "special" on a model with none
        VIEW["stat"] = names[0]
    left, right = st.columns([2, 3])
    stat = left.selectbox("Statistic (the table is sorted by it)", names, key=VIEW.key("stat"),
                          format_func=lambda n: STATISTICS[n][0])
    with right.expander("Pool several texts", expanded=False):
        extra_raw = st.text_area(
            "More texts, one per line (optional)", key="hs_more", height=110,
            help=f"Up to {MAX_EXTRA_TEXTS} more lines of up to {settings.max_chars():,} characters "
            "each. Every row (query token) of every text counts once, so longer texts weigh more.")
    extra = [line.strip() for line in extra_raw.splitlines() if line.strip()][:MAX_EXTRA_TEXTS]
    limit = settings.max_chars()
    if any(len(line) > limit for line in extra):
        st.warning(f"Each extra text is cut to {limit:,} characters, like the sidebar text.")
        extra = [line[:limit] for line in extra]

    totals = [_main_totals(trace, key)]
    for line in extra:
        try:
            totals.append(_text_totals(selection.model_name, line))
        except ValueError as exc:
            st.warning(f"Skipped “{md_escape(shorten(line, 40))}”: {md_escape(str(exc))}")
    stats = pooled_statistics(totals)
    label, definition = STATISTICS[stat]
    where = ("the sidebar text" if len(totals) == 1
             else f"the sidebar text and {len(totals) - 1} more")
    st.markdown(f"**{label}**, over {where}. {unbroken(definition)}")

    fig = head_grid(stats[stat], title=f"{label}, every head", value_name=label,
                    fmt=FORMATS.get(stat, ".2f"),
                    subtitle="rows = layers, columns = heads; click a head to open it on the "
                    "attention page")
    st.plotly_chart(fig, key="hs_grid",
                    on_select=pick_head("hs_grid", cfg.n_heads),
                    selection_mode="points", config=chart_config("head-statistics", fig))

    _table(cfg, names, stats, stat, label, _repeat_columns(selection, trace))

    _pick_and_define(cfg, names)


# Shared, not copied: every session showing this view (a class following its teacher) draws
# the one figure, built once per server; it is never mutated (ui/cache.shared).
@shared("head_grid_figure")
def _grid_figure(_trace, key: tuple, stat: str):
    stats = pooled_statistics([_main_totals(_trace, key)])
    label = STATISTICS[stat][0]
    return head_grid(stats[stat], title=f"{label}, every head", value_name=label,
                     fmt=FORMATS.get(stat, ".2f"), subtitle="rows = layers, columns = heads; "
                     "click a head to open it on the attention page")


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py): the step's statistic for every head,
    on the step's text; a click opens that head."""
    trace = require_trace(selection)
    key = (selection.model_name, selection.text, selection.pair)
    st.plotly_chart(_grid_figure(trace, key, VIEW.setdefault("stat")),
                    key="hs_grid", on_select=pick_head("hs_grid", trace.cfg.n_heads),
                    selection_mode="points", config=chart_config("head-statistics"))
