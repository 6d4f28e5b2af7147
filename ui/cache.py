"""Cached model loading and cached runs. Cached objects are shared: never mutate them."""

from __future__ import annotations

import streamlit as st

from model import LoadedModel, Trace, load_model

from .settings import MODEL_CACHE_ENTRIES, TRACE_CACHE_ENTRIES

# The app shows patterns, q/k (for the Q·K view), the residual stream and the embeddings;
# scores and q·k are recomputed from q and k when needed, so they are not kept.
APP_HOOKS = ("hook_pattern", "hook_q", "hook_k", "hook_rot_q", "hook_rot_k", "hook_resid_pre",
             "hook_resid_post", "hook_tok", "hook_pos", "hook_type", "hook_sum", "embed.ln")


def keep_for_app(name: str) -> bool:
    return any(part in name for part in APP_HOOKS)


@st.cache_resource(max_entries=MODEL_CACHE_ENTRIES, show_spinner="Loading the model…")
def get_model(name: str) -> LoadedModel:
    return load_model(name)


@st.cache_resource(max_entries=TRACE_CACHE_ENTRIES, show_spinner="Running the model…")
def get_trace(name: str, text: str, pair: str) -> Trace:
    return get_model(name).run(text, pair or None, keep=keep_for_app)
