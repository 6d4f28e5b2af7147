"""The lessons page owns its link (/lessons?lesson=<id>&step=<n>): there, pages embedded in a
step neither read nor write the URL, and a link to a step sets the session up before the
sidebar is drawn. Kept apart from ui/lesson_step.py so other pages import nothing of lessons."""

from __future__ import annotations

import streamlit as st


def sync_from_url(on_lessons_page: bool) -> None:
    st.session_state["_url_frozen"] = on_lessons_page
    if on_lessons_page and "lesson" in st.query_params:
        from .lesson_step import sync_from_url as open_linked_step

        open_linked_step()
