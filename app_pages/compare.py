"""Compare two inputs: the same layer and head on two texts, and where they differ."""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis.head_stats import STATISTICS, head_statistics
from ui import settings
from ui.cache import get_trace
from ui.charts import chart_config
from ui.callbacks import copy_state, pick_head
from ui.patching_inputs import default_corruption, follow_default
from ui.sidebar import require_trace
from ui.text import md_escape
from ui.widgets import index_slider
from viz.attention import attention_heatmap
from viz.compare import difference_heatmap
from viz.heads import head_grid

HALF_PAGE_PX = 460  # a column of two on a 1400 px screen with the sidebar open


def _default_b(loaded, text_a: str) -> str:
    """Text A with one word swapped, keeping its length in tokens so the difference map lines
    up; text A itself when no swap keeps the length."""
    return default_corruption(loaded, text_a, loaded.cfg.n_ctx) or text_a


def _stats(trace):
    return head_statistics(trace.attentions, trace.tokens, trace.special_mask[0])


selection = st.session_state["selection"]
st.title("Compare two inputs")
trace_a = require_trace(selection)
cfg = trace_a.cfg
st.caption("Text A is the sidebar text; type text B here. Both run through the same model and "
           "are shown with the same layer and head. Change one word to see which heads "
           "notice." + (" B uses the same second sentence as A." if selection.pair else ""))

made = _default_b(selection.model, selection.text)
follow_default("cmp_text_b", "_cmp_default", made)  # text A's, until the user edits B
left, right = st.columns([5, 1], vertical_alignment="bottom")
text_b = left.text_area("Text B", key="cmp_text_b", height=90)
right.button("Start from text A", key="cmp_copy", on_click=copy_state("sb_text", "cmp_text_b"),
             help="Copy the sidebar text here, then edit a word.")
if text_b == made != selection.text:
    st.caption("B starts as text A with one word swapped, so both have the same number of "
               "tokens. Type your own B to compare anything else.")
elif text_b == made:
    st.caption("B starts as a copy of text A: change one word to see which heads notice.")

for name in ("cmp_layer", "cmp_head"):  # start on the head open on the attention page
    st.session_state.setdefault(name, st.session_state.get(name.replace("cmp", "attn"), 0))
controls = st.columns(2)
layer = index_slider(controls[0], "Layer", cfg.n_layers, key="cmp_layer")
head = index_slider(controls[1], "Head", cfg.n_heads, key="cmp_head")

limit = settings.max_chars()
if len(text_b) > limit:
    st.warning(f"Text B was cut to {limit:,} characters.")
    text_b = text_b[:limit]
if not text_b.strip():
    st.info("Type text B above to compare it with the sidebar text.")
    st.stop()
try:
    trace_b = get_trace(selection.model_name, text_b, selection.pair)
except ValueError as exc:
    st.error(md_escape(str(exc)))
    st.stop()
if trace_b.dropped[0]:
    st.warning(f"Text B is longer than the model's context: {trace_b.dropped[0]:,} tokens "
               "were dropped.")

tokens_a, tokens_b = trace_a.tokens, trace_b.tokens
with st.container(key="wide_cmp_pair"):  # side by side; one under the other when narrow
    cols = st.columns(2)
shared_max = max(float(t.attentions[layer, head].max()) for t in (trace_a, trace_b))
for col, trace, name, tokens in ((cols[0], trace_a, "A", tokens_a),
                                 (cols[1], trace_b, "B", tokens_b)):
    fig = attention_heatmap(trace.attentions[layer, head].numpy(), tokens, tokens,
                            title=f"{name}: layer {layer}, head {head} ({len(tokens)} tokens)",
                            causal=cfg.causal, max_width=HALF_PAGE_PX)
    if len(tokens_a) == len(tokens_b):
        fig.update_traces(zmin=0, zmax=shared_max)  # one colour scale, so cells compare
    col.plotly_chart(fig, key=f"cmp_{name.lower()}", config=chart_config("compare", fig),
                     width="content")

st.subheader("Difference map")
if len(tokens_a) != len(tokens_b):
    st.info(
        f"No difference map: A has {len(tokens_a)} tokens and B has {len(tokens_b)}. A "
        "difference needs the same grid on both sides, cell (query i, key j) in A against "
        "the same cell in B; with different lengths the positions no longer line up, so "
        "subtracting them would compare unrelated token pairs. Edit B so that it tokenizes "
        "to the same length (swap one word for another word of one token), or compare the "
        "head statistics below, which do not need aligned tokens.")
else:
    diff_heads = np.abs(trace_b.attentions.numpy() - trace_a.attentions.numpy())  # [L, H, q, k]
    changed = sum(a != b for a, b in zip(tokens_a, tokens_b))
    st.caption(f"Same length ({len(tokens_a)} tokens), {changed} position"
               f"{'' if changed == 1 else 's'} with a different token; labels show "
               "“A-token|B-token” where they differ.")
    st.plotly_chart(
        difference_heatmap(trace_a.attentions[layer, head].numpy(),
                           trace_b.attentions[layer, head].numpy(), tokens_a, tokens_b,
                           title=f"B − A, layer {layer}, head {head}", causal=cfg.causal),
        key="cmp_diff", config=chart_config("compare_difference"), width="content")
    # Mean over query rows of the L1 distance between the two rows (each row sums to 1).
    per_head = diff_heads.sum(-1).mean(-1)  # [n_layers, head], in [0, 2]
    st.plotly_chart(
        head_grid(per_head, title="Which heads changed most", value_name="mean |B − A| per row",
                  fmt=".2f", marked=[(layer, head)],
                  subtitle="sum over keys of |B − A|, averaged over queries (0 = identical, "
                  "2 = no overlap); click a head to show it above"),
        key="cmp_heads", on_select=pick_head("cmp_heads", cfg.n_heads, "cmp_layer", "cmp_head"),
        selection_mode="points", config=chart_config("compare_heads"))

st.subheader("Head statistics, B − A")
stat = st.selectbox("Statistic", [n for n in STATISTICS if not (cfg.causal and n == "next")],
                    key="cmp_stat", format_func=lambda n: STATISTICS[n][0])
label, definition = STATISTICS[stat]
st.markdown(f"**{label}**: {definition}")
if len(tokens_a) != len(tokens_b) and stat in ("entropy", "distance"):
    st.caption("Entropy and distance grow with the number of tokens, so between texts of "
               "different lengths much of this difference is just length; the shares "
               "(special tokens, previous token...) compare more fairly.")
delta = _stats(trace_b)[stat] - _stats(trace_a)[stat]  # [n_layers, head]
st.plotly_chart(
    head_grid(delta, title=f"{label}: B − A", value_name=f"Δ {label}", fmt=".2f",
              diverging=True, marked=[(layer, head)],
              subtitle="red: higher on B, blue: higher on A; click a head to show it above"),
    key="cmp_stats", on_select=pick_head("cmp_stats", cfg.n_heads, "cmp_layer", "cmp_head"),
    selection_mode="points", config=chart_config("compare_statistics"))
