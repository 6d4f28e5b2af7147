"""Attention Lab: see what happens inside a transformer. Run with `streamlit run asgi.py`
(the pages, with the live class's own route beside them; asgi.py serves this script)."""

from pathlib import Path

# The hub is contacted only for a hub id the Hugging Face cache lacks, on first use
# (model/hub.py); bundled models and folders never touch the network. HF_HUB_OFFLINE=1, set
# by whoever starts the app, keeps it off the hub entirely, as Hugging Face documents.

import streamlit as st  # noqa: E402

from server import sessions, settings, uploads  # noqa: E402 - none of these loads torch
from ui import (  # noqa: E402 - none of these loads torch (ui.cache and ui.sidebar do: below)
    busy, class_bar, class_follow, class_teach, engine_warm, lesson_link, page_registry,
    page_style, projector, teacher_tools, urlstate, view_state,
)

HERE = Path(__file__).resolve().parent

# A local icon file: a Material or emoji icon would make the browser fetch it from a CDN.
st.set_page_config(page_title="Attention Lab", page_icon=str(HERE / "assets" / "icon.png"),
                   layout="wide",
                   initial_sidebar_state="expanded")

uploads.install()  # a per-session quota on uploaded files (server/uploads.py); once per process
projector.install()  # projector mode enlarges every figure of the session that turns it on

if settings.hosted():  # a shared server: users see a message, never a traceback
    st.set_option("client.showErrorDetails", "none")
    settings.use_hosted_threads()

PAGE_OBJECTS = page_registry.pages()  # from the declarations in teaching/pages.py
# every page listed, none behind "View more"
page = st.navigation(page_registry.sections(PAGE_OBJECTS), expanded=True)
view_state.start_run()
if page.url_path == "teach":  # a teacher link: its key leaves the address before anything
    class_teach.take_teacher_link()  # else of this run writes the address (the view's settings)
# a student following a live class takes the class's view (a jump, or a lesson step)
class_follow.before_run(PAGE_OBJECTS, page_registry.path_of(page))
jumped = view_state.take_jump()  # a jump button or grid click set the view: open its page
if jumped in PAGE_OBJECTS and jumped != page.url_path:
    st.switch_page(PAGE_OBJECTS[jumped])
page_style.apply()
projector.apply()
class_bar.draw()  # in a live class: following or looking around; the teacher's headcount
urlstate.load_from_url()
lesson_link.sync_from_url(page.url_path == "lessons")  # before the sidebar: the step's state
# The start page needs no run of the sidebar's text and draws from stored numbers
# (ui/start_example.py): it goes first, so a visitor sees it before torch and the model load.
start_first = page.url_path in ("", "start")
if start_first:
    page_registry.run(page)
    if not engine_warm.ready():  # a cold server: the page is drawn; the engine loads behind it
        engine_warm.start()
        engine_warm.note_in_sidebar()
        st.stop()

from ui import cache, foreign, sidebar, switch  # noqa: E402 - the engine: torch and the models

cache.start_memory_keeper()
# A closed tab's session is closed FREED_WITHIN_SECONDS later (server/sessions.py), and the memory
# keeper hands what it held back to the system.
sessions.on_session_end(sessions.current_session_id(), "memory", cache.note_freed)
waiting = busy.BusyLine()
# backpressure: a few runs at once, in order; a new text counts as a long run in the wait shown
with cache.run_queue().slot(on_wait=waiting, computes=sidebar.brings_new_input()):
    waiting.clear()
    switch.take_pending()  # a decoder-lab page opening on the bundled decoder (ui/switch.py)
    selection = sidebar.render(page.url_path)
    view_state.keep_chosen(selection)  # for the glue that names downloads and writes links
    sidebar.remember_input()
    teacher_tools.render(page.url_path)
    foreign.gate(selection, page.url_path)  # a model only HF's code runs
    if not start_first:
        page_registry.run(page, selection)
    class_follow.after_run(page_registry.path_of(page))  # a teacher's view goes to the class
