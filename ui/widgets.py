"""Small widget helpers shared by the pages."""

from __future__ import annotations

import streamlit as st

from .sidebar import model_label
from .model_names import NAMES


def index_slider(container, label: str, n: int, key: str, **kwargs) -> int:
    """A slider over 0..n-1 (a layer, a head). A value already in the session (from a link,
    another page or a bigger model) is first brought into range. With n == 1 there is nothing
    to choose (and Streamlit refuses a slider whose ends are equal): say so and return 0."""
    if key in st.session_state:
        st.session_state[key] = min(max(int(st.session_state[key]), 0), max(n - 1, 0))
    if n <= 1:
        st.session_state[key] = 0
        container.caption(f"{label}: 0 (this model has only one)")
        return 0
    return container.slider(label, 0, n - 1, key=key, **kwargs)


def shown_model_name(model_name: str) -> str:
    """How a page names the model in its text: a model trained on the training page by its
    label there ("trained: induction"), a bundled model by its name ("MiniLM"), a model folder
    by its folder name, never a server path."""
    for label, directory in st.session_state.get("trained_models", {}).items():
        if directory == model_name:
            return label
    return NAMES.get(model_name) or model_label(model_name)
