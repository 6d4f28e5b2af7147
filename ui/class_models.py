"""A model the teacher trained in their own browser session, in a live class.

Such a model lives only in the teacher's session (ui/view_state.TRAINED_KEY: its label, such
as "trained: induction", and a folder the session deletes), so no student's screen can open it.
The teacher's published view says so (`trained=1` in its link). A student's screen then opens
the same page and settings with a model it can open: the app's own small model trained on the
same task (tiny-induction for "trained: induction"), else the default model, and its class bar
says so in one sentence. Never the label as a model to load, never another model shown under
that name (not even one the student trained under the same label).
"""

from __future__ import annotations

import streamlit as st

from .view_state import DEFAULT_MODEL, TRAINED_KEY, ViewState, trained_task

FLAG = "trained"  # in a class link: the teacher's model was trained in the teacher's session


def shared_link(view: ViewState) -> str:
    """The link of the teacher's view for the class, flagged when its model was trained in
    this session."""
    link = view.to_link()
    if view.model in st.session_state.get(TRAINED_KEY, {}):
        link += f"&{FLAG}=1"
    return link


def stand_in(label: str) -> str:
    """The model a student sees instead of the teacher's trained one: the bundled model of the
    same task when there is one, else the default model."""
    from model import BUNDLED

    task = trained_task(label)
    return f"tiny-{task}" if f"tiny-{task}" in BUNDLED else DEFAULT_MODEL


def openable(params: dict, m) -> dict:
    """A following student's class link parameters, with a model this screen can open. `m`
    (the student's Membership) keeps which model stands in, for the bar's sentence."""
    model = str(params.get("model", ""))
    if params.get(FLAG) != "1":
        if m is not None:
            m.instead = ""
        return params
    instead = stand_in(model)  # even if this student trained one of the same label: that is
    # another model, never shown as the teacher's
    if m is not None:
        m.instead = instead
    return {**params, "model": instead}


def sentence(model: str) -> str:
    """What the student is told (Markdown-safe: `model` is a bundled model's name)."""
    from .model_names import NAMES

    shown = NAMES.get(model, model)
    what = (f"the app's {shown} model" if model == DEFAULT_MODEL else
            f"{shown}, the app's own small model trained on the same task,")
    return ("The teacher's screen uses a model the teacher trained in their own browser, which "
            f"this screen cannot open. You see the same view with {what} instead.")
