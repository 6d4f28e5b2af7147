"""Compare two inputs: the same layer and head on two texts, and where they differ."""

from __future__ import annotations

import re

import numpy as np
import streamlit as st
import torch

from analysis.head_stats import STATISTICS, head_statistics, unknown_token
from server import settings
from ui import projector
from ui.alphabet import read_text, show_unknown_note_read
from ui.cache import get_trace
from ui.charts import chart_config
from ui.column_width import column_width
from ui.callbacks import copy_state, pick_head
from ui.patching_inputs import (FALLBACKS, MAX_TRIES, SWAPS, WORD, default_corruption,
                               first_words, follow_default, token_count)
from ui.sidebar import require_trace
from ui.text import md_escape
from ui.view_state import page_view
from ui.widgets import index_slider
from viz.attention import attention_heatmap
from viz.compare import changed_runs, describe_changes, difference_heatmap, zoom_window
from viz.heads import head_grid
from viz.style import HALF_PAGE_PX, ROOM_PAGE_PX, ROOM_SCALE

VIEW = page_view("compare")  # this page's settings (teaching/pages.py declares them)
PICKED = (VIEW.spec.key("layer"), VIEW.spec.key("head"))  # where a click in a head grid goes
NO_BAR_MARGIN = 12  # px right of a map drawn without its colour bar


SKIP = {"the", "a", "an", "to", "of", "and", "in", "on", "at", "is", "was", "it"}


def _same_length_swap(loaded, text: str) -> str:
    """A fallback for a character model: the first word (not a little word like "the") swapped
    for a word of as many letters, so it keeps the length; "" when none keeps it."""
    n, tries = token_count(loaded, text), 0
    words = [m for m in WORD.finditer(text) if m.group().lower() not in SKIP]
    pool = list(dict.fromkeys(["red", "big", "cold", "blue", "small"] + list(FALLBACKS)
                              + list(SWAPS.values())))
    for match in words:
        word = match.group()
        for other in (w for w in pool if len(w) == len(word) and w != word.lower()):
            other = other.capitalize() if word[:1].isupper() else other
            candidate = text[:match.start()] + other + text[match.end():]
            tries += 1
            if token_count(loaded, candidate) == n:
                return candidate
            if tries >= MAX_TRIES:
                return ""
            break  # one try per word: the next word may suit better
    return ""


def _swapped(loaded, text: str) -> str:
    limit = loaded.cfg.n_ctx
    return default_corruption(loaded, text, limit) or _same_length_swap(loaded, text)


def _default_b(loaded, text_a: str) -> str:
    """Text A with one word swapped, keeping its length in tokens so the difference map lines
    up; text A itself when no swap keeps the length. On a text longer than the model's
    context the swap is chosen among the words the model reads (its first whole words, as
    "use the first N tokens" cuts them on the patching page) and the rest of A is kept."""
    limit = loaded.cfg.n_ctx
    if token_count(loaded, text_a) <= limit:
        return _swapped(loaded, text_a) or text_a
    n_words = len(first_words(loaded, text_a, limit).split())
    if not n_words:
        return text_a
    end = list(re.finditer(r"\S+", text_a))[n_words - 1].end()
    swapped = _swapped(loaded, text_a[:end])
    return swapped + text_a[end:] if swapped else text_a


def fitting_width(column_px: int | None, fallback: int | None, room: bool) -> int | None:
    """The widest a map may be drawn in a column the browser measured `column_px` wide, so
    Streamlit never narrows it into a tall strip (None: not measured yet, `fallback`). In
    projector mode a map wider than HALF_PAGE_PX is grown to ROOM_PAGE_PX: in a narrower
    column it stays at most half a page, which grows by ROOM_SCALE at most."""
    if column_px is None:
        return fallback
    if room and column_px < ROOM_PAGE_PX:
        return int(min(HALF_PAGE_PX, column_px / ROOM_SCALE))
    return int(column_px)


def _describe_b(note, trace_a, trace_b, swapped: bool, same_text: bool) -> None:
    """One line under text B: which tokens B changed (from the two runs), or, when the model
    reads the same tokens in both, that there is nothing to compare; then the page stops."""
    tokens_a, tokens_b = trace_a.tokens, trace_b.tokens
    if tokens_a == tokens_b and torch.equal(trace_a.input_ids, trace_b.input_ids):
        if trace_b.dropped[0] and not same_text:
            note.info(f"B differs from A only after the first {len(tokens_b)} tokens, which "
                      "the model never reads: change a word nearer the start of B.")
        else:
            note.info("B is the same as A: change a word in B to see what moves.")
        st.stop()
    lines = []
    if len(tokens_a) == len(tokens_b):
        what = md_escape(describe_changes(tokens_a, tokens_b))
        lines.append(f"B starts as text A with one word swapped ({what}), so both have the "
                     "same number of tokens. Type your own B to compare anything else."
                     if swapped else f"B differs from A at {what}.")
    if trace_b.dropped[0] and trace_a.dropped[0] and len(tokens_a) == len(tokens_b):
        lines.append(f"Like A, B runs on its first {len(tokens_b)} tokens.")
    elif trace_b.dropped[0]:
        st.warning(f"Text B is longer than the model's context: {trace_b.dropped[0]:,} tokens "
                   "were dropped.")
    if lines:
        note.caption(" ".join(lines))


def _stats(trace, unknown: str | None):
    """Every statistic of one text; `unknown` is the model's unknown-character token ("?"),
    which is not punctuation."""
    return head_statistics(trace.attentions, trace.tokens, trace.special_mask[0],
                           unknown=unknown)


def _difference_map(trace_a, trace_b, layer: int, head: int) -> None:
    """B − A in one head, cell by cell (texts of one length only; else why not)."""
    cfg, tokens_a, tokens_b = trace_a.cfg, trace_a.tokens, trace_b.tokens
    width = fitting_width(column_width("cmp_page_width"), None, projector.on())
    if len(tokens_a) != len(tokens_b):
        st.info(
            f"No difference map: A has {len(tokens_a)} tokens and B has {len(tokens_b)}. A "
            "difference needs the same grid on both sides, cell (query i, key j) in A against "
            "the same cell in B; with different lengths the positions no longer line up, so "
            "subtracting them would compare unrelated token pairs. Edit B so that it tokenizes "
            "to the same length (swap one word for another word of one token), or compare the "
            "head statistics below, which do not need aligned tokens.")
    else:
        changed = sum(a != b for a, b in zip(tokens_a, tokens_b))
        st.caption(f"Same length ({len(tokens_a)} tokens), {changed} position"
                   f"{'' if changed == 1 else 's'} with a different token "
                   f"({md_escape(describe_changes(tokens_a, tokens_b))}); labels show "
                   "“A-token|B-token” where they differ.")
        st.plotly_chart(
            difference_heatmap(trace_a.attentions[layer, head].numpy(),
                               trace_b.attentions[layer, head].numpy(), tokens_a, tokens_b,
                               title=f"B − A, layer {layer}, head {head}", causal=cfg.causal,
                               max_width=width),
            key="cmp_diff", config=chart_config("compare_difference"), width="content")


def _difference(trace_a, trace_b, per_head, layer: int, head: int) -> None:
    """The difference map and which heads changed most (texts of one length only)."""
    st.subheader("Difference map")
    _difference_map(trace_a, trace_b, layer, head)
    if per_head is not None:
        grid = head_grid(per_head, title="Which heads changed most",
                         value_name="mean |B − A| per row", fmt=".2f", marked=[(layer, head)],
                         subtitle="sum over keys of |B − A|, averaged over queries (0 = "
                         "identical, 2 = no overlap); click a head to show it above")
        # never below 0: the scale starts there, not at a made-up negative end
        grid.update_traces(zmin=0, zmax=float(per_head.max()) or 1.0, selector=dict(type="heatmap"))
        st.plotly_chart(
            grid,
            key="cmp_heads", on_select=pick_head("cmp_heads", trace_a.cfg.n_heads, *PICKED),
            selection_mode="points", config=chart_config("compare_heads"))


def _statistics_difference(trace_a, trace_b, layer: int, head: int, unknown=None) -> None:
    """One statistic of every head, B minus A."""
    cfg, tokens_a, tokens_b = trace_a.cfg, trace_a.tokens, trace_b.tokens
    st.subheader("Head statistics, B − A")
    stat = st.selectbox("Statistic", [n for n in STATISTICS if not (cfg.causal and n == "next")],
                        key="cmp_stat", format_func=lambda n: STATISTICS[n][0])
    label, definition = STATISTICS[stat]
    st.markdown(f"**{label}**: {definition}")
    if len(tokens_a) != len(tokens_b) and stat in ("entropy", "distance"):
        st.caption("Entropy and distance grow with the number of tokens, so between texts of "
                   "different lengths much of this difference is just length; the shares "
                   "(special tokens, previous token...) compare more fairly.")
    delta = _stats(trace_b, unknown)[stat] - _stats(trace_a, unknown)[stat]  # [n_layers, head]
    st.plotly_chart(
        head_grid(delta, title=f"{label}: B − A", value_name=f"Δ {label}", fmt=".2f",
                  diverging=True, marked=[(layer, head)],
                  subtitle="red: higher on B, blue: higher on A; click a head to show it above"),
        key="cmp_stats", on_select=pick_head("cmp_stats", cfg.n_heads, *PICKED),
        selection_mode="points", config=chart_config("compare_statistics"))


def _run_b(selection, text_b: str, note):
    """Text B's run (cut to the longest text allowed, said on the page), or None with why
    not on the page."""
    limit = settings.max_chars()
    if len(text_b) > limit:
        st.warning(f"Text B was cut to {limit:,} characters.")
        text_b = text_b[:limit]
    if not text_b.strip():
        note.info("Type text B above to compare it with the sidebar text.")
        return None
    try:
        return get_trace(selection.model_name, text_b, selection.pair)
    except ValueError as exc:
        st.error(md_escape(str(exc)))
        return None


def _moved(trace_a, trace_b):
    """How much each head's attention moved, mean over rows of sum |B − A| [n_layers, head]
    in [0, 2] (None: the texts differ in length). The page opens on the head open on the
    attention page, else on the head that moved most."""
    per_head = None
    if len(trace_a.tokens) == len(trace_b.tokens):
        diff_heads = np.abs(trace_b.attentions.numpy() - trace_a.attentions.numpy())  # [L, H, q, k]
        per_head = diff_heads.sum(-1).mean(-1)  # [n_layers, head]
    moved = (0, 0) if per_head is None else np.unravel_index(int(per_head.argmax()), per_head.shape)
    attention = page_view("attention")
    for name, first in (("layer", moved[0]), ("head", moved[1])):
        opened = attention.given(name)
        VIEW.setdefault(name, int(first) if opened is None else opened)
    return per_head


def _pair(trace_a, trace_b, layer: int, head: int, stack: bool = True) -> None:
    """The head's attention on A and on B, side by side (one under the other when narrow,
    if `stack`: a lesson step's figure keeps them side by side, smaller), on one colour scale
    when they line up; a long text opens on the change."""
    cfg, tokens_a, tokens_b = trace_a.cfg, trace_a.tokens, trace_b.tokens
    with st.container(key="wide_cmp_pair" if stack else "cmp_pair_step"):
        cols = st.columns(2)
    measured = []  # each column's width in the browser: both the same, side by side or not
    for col, name in zip(cols, "ab"):
        with col:
            measured.append(column_width(f"cmp_{name}_width"))
    half = fitting_width(min(measured) if None not in measured else None, HALF_PAGE_PX,
                         projector.on())
    shared_max = max(float(t.attentions[layer, head].max()) for t in (trace_a, trace_b))
    aligned = len(tokens_a) == len(tokens_b)
    window = zoom_window(tokens_a, tokens_b) if aligned else None  # a long text: on the change
    changed = [i for first, last in (changed_runs(tokens_a, tokens_b) if window else [])
               for i in range(first, last + 1)]  # always labelled in the zoomed maps
    for col, trace, name, tokens in ((cols[0], trace_a, "A", tokens_a),
                                     (cols[1], trace_b, "B", tokens_b)):
        fig = attention_heatmap(trace.attentions[layer, head].numpy(), tokens, tokens,
                                title=f"{name}: layer {layer}, head {head} ({len(tokens)} tokens)",
                                causal=cfg.causal, max_width=half,  # one scale for both
                                zmax=shared_max if aligned else None, window=window,
                                changed=changed)
        if not stack and half is not None and fig.layout.width > half:
            _without_colour_bar(fig)  # side by side in a narrow column: room for the cells
        col.plotly_chart(fig, key=f"cmp_{name.lower()}", config=chart_config("compare", fig),
                         width="content")


def _without_colour_bar(fig) -> None:
    """A map drawn without its colour bar, narrower by the bar's margin (its subtitle still
    says where a stretched scale tops out)."""
    bar = fig.layout.margin.r - NO_BAR_MARGIN
    fig.update_traces(showscale=False, selector=dict(type="heatmap"))
    fig.update_layout(width=fig.layout.width - bar, margin=dict(r=NO_BAR_MARGIN))


def render(selection) -> None:
    st.title("Compare two inputs", anchor=False)
    trace_a = require_trace(selection)
    cfg = trace_a.cfg
    st.caption("Text A is the sidebar text; type text B here. Both run through the same model and "
               "are shown with the same layer and head. Change one word to see which heads "
               "notice." + (" B uses the same second sentence as A." if selection.pair else ""))

    made = _default_b(selection.model, selection.text)
    VIEW.setdefault("text_b", made)  # from a link or a lesson step, else text A with a word swapped
    follow_default(VIEW.key("text_b"), "_cmp_default", made)  # text A's, until the user edits B
    left, right = st.columns([5, 1], vertical_alignment="bottom")
    text_b = left.text_area("Text B", key=VIEW.key("text_b"), height=90)
    right.button("Start from text A", key="cmp_copy",
                 on_click=copy_state("sb_text", VIEW.key("text_b")),
                 help="Copy the sidebar text here, then edit a word.")
    note = st.empty()  # under text B and its button: what B is, once B has run

    trace_b = _run_b(selection, text_b, note)
    if trace_b is None:
        st.stop()
    _describe_b(note, trace_a, trace_b, swapped=text_b == made != selection.text,
                same_text=text_b == selection.text)
    # the "?" on a character model's axes, for the characters of A or of B it cannot read
    show_unknown_note_read(selection, read_text(selection.text, trace_a),
                           read_text(text_b, trace_b))

    per_head = _moved(trace_a, trace_b)
    controls = st.columns(2)
    layer = index_slider(controls[0], "Layer", cfg.n_layers, key=VIEW.key("layer"))
    head = index_slider(controls[1], "Head", cfg.n_heads, key=VIEW.key("head"))
    _pair(trace_a, trace_b, layer, head)

    _difference(trace_a, trace_b, per_head, layer, head)

    unknown = unknown_token(selection.model.tokenizer)
    _statistics_difference(trace_a, trace_b, layer, head, unknown)


def figure(name: str, selection) -> None:
    """A lesson step's one figure (teaching/figures.py), in the step's view: its head on the
    sidebar text and on text B side by side ("pair"), or B − A ("difference")."""
    trace_a = require_trace(selection)
    text_b = VIEW.setdefault("text_b", _default_b(selection.model, selection.text))
    trace_b = _run_b(selection, text_b, st.empty())
    if trace_b is None:
        return
    if trace_a.tokens == trace_b.tokens and torch.equal(trace_a.input_ids, trace_b.input_ids):
        return st.info("The model reads the same tokens in both texts: nothing to compare.")
    _moved(trace_a, trace_b)
    layer, head = VIEW["layer"], VIEW["head"]
    if name == "difference":
        return _difference_map(trace_a, trace_b, layer, head)
    _pair(trace_a, trace_b, layer, head, stack=False)
