"""The sidebar's teacher tools on every page: projector mode, and "record this view as a step"
of a draft lesson (edited and downloaded on the Teach page)."""

from __future__ import annotations

import streamlit as st

from teaching.pages import BY_PATH

from server import drafts, sessions

from . import projector, view_state
from .page_registry import page_link
from .urlstate import write_to_url

DRAFT_KEY = "lesson_draft"  # this browser's draft: {"title", "summary", "steps": [dict, ...]}
MAX_DRAFT_STEPS = 60


def draft() -> dict:
    """This browser's draft lesson, kept on the server (server/drafts.py): a reload keeps it."""
    st.session_state[DRAFT_KEY] = drafts.draft_for(sessions.browser_id())
    return st.session_state[DRAFT_KEY]


def current_step(page: str) -> dict:
    """This page's view as a lesson step: model, text, pair and the settings the page used
    (the model by its name or label, never a folder on the server)."""
    view = view_state.current(page)
    return {"page": page, "title": BY_PATH[page].title, "explain": "", "model": view.model,
            "text": view.text, "pair": view.pair, "settings": dict(view.settings)}


def _record(page: str) -> None:
    lesson = draft()
    steps = lesson["steps"]
    step = current_step(page)
    if len(steps) >= MAX_DRAFT_STEPS:
        st.session_state["_draft_note"] = f"A lesson holds at most {MAX_DRAFT_STEPS} steps."
    elif not drafts.room_for(lesson, step):
        st.session_state["_draft_note"] = ("The draft is as long as a lesson file may be: "
                                           "download it, or delete a step first.")
    else:
        lesson["next_uid"] = lesson.get("next_uid", 0) + 1
        steps.append(step | {"uid": lesson["next_uid"]})
        st.session_state["_draft_note"] = f"Recorded as step {len(steps)}."


def render(url_path: str) -> None:
    """Draw the tools at the bottom of the sidebar."""
    with st.sidebar:
        st.divider()
        st.toggle("Projector mode", key=projector.KEY,
                  help="Larger text and figures for a room. Kept in the link.")
        write_to_url(projector="1" if projector.on() else None)
        spec = BY_PATH.get(url_path)
        if spec is None or not spec.lesson:
            return
        page = spec.path
        st.button("Record this view as a step", key="teach_record", icon=":material/add:",
                  on_click=_record, args=(page,),
                  help="Adds this page, model, text and settings to a draft lesson. Edit and "
                  "download it on the Teach page.")
        note = st.session_state.pop("_draft_note", None)
        n = len(draft()["steps"])
        if note or n:
            st.caption(f"{note or ''} Draft lesson: {n} step{'s' * (n != 1)}.".strip())
            page_link(st, "teach", label="Edit the draft", icon=":material/edit:")
