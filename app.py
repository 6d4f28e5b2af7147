"""Attention Lab: see what happens inside a transformer. Run with `streamlit run app.py`."""

from pathlib import Path

# The hub is contacted only for a hub id the Hugging Face cache lacks, on first use
# (model/hub.py); bundled models and folders never touch the network. HF_HUB_OFFLINE=1, set
# by whoever starts the app, keeps it off the hub entirely, as Hugging Face documents.

import streamlit as st  # noqa: E402

from ui import (  # noqa: E402 - none of these loads torch (ui.cache and ui.sidebar do: below)
    busy, lesson_link, page_style, projector, sessions, settings, teacher_tools, uploads, urlstate,
)

HERE = Path(__file__).resolve().parent

# A local icon file: a Material or emoji icon would make the browser fetch it from a CDN.
st.set_page_config(page_title="Attention Lab", page_icon=str(HERE / "assets" / "icon.png"),
                   layout="wide",
                   initial_sidebar_state="expanded")

uploads.install()  # a per-session quota on uploaded files (ui/uploads.py); once per process
projector.install()  # projector mode enlarges every figure of the session that turns it on

if settings.hosted():  # a shared server: users see a message, never a traceback
    st.set_option("client.showErrorDetails", "none")
    settings.use_hosted_threads()

# (section, file, title, icon, url path); the first is the start page, at "/".
PAGES = [
    ("Start", "app_pages/start.py", "Start here", ":material/home:", "start"),
    ("Start", "app_pages/lessons.py", "Lessons", ":material/school:", "lessons"),
    ("Start", "app_pages/teach.py", "Teach with it", ":material/co_present:", "teach"),
    ("Explore", "app_pages/attention.py", "Attention", ":material/grid_on:", "attention"),
    ("Explore", "app_pages/effect.py", "Attention vs effect", ":material/balance:", "effect"),
    ("Explore", "app_pages/heads.py", "Head statistics", ":material/leaderboard:", "heads"),
    ("Explore", "app_pages/compare.py", "Compare two inputs", ":material/compare_arrows:", "compare"),
    ("Explore", "app_pages/ablation.py", "Head ablation", ":material/content_cut:", "ablation"),
    ("Explore", "app_pages/logit_lens.py", "Logit lens", ":material/visibility:", "logit-lens"),
    ("Decoder lab", "app_pages/generate.py", "Generate, step by step", ":material/edit_note:", "generate"),
    ("Decoder lab", "app_pages/attribution.py", "Which parts made the logit", ":material/stacked_bar_chart:", "attribution"),
    ("Decoder lab", "app_pages/patching.py", "Patching: find the circuit", ":material/cable:", "patching"),
    ("Learn", "app_pages/walkthrough.py", "Forward pass, step by step", ":material/footprint:", "walkthrough"),
    ("Learn", "app_pages/positions.py", "Positional encodings", ":material/waves:", "positions"),
    ("Learn", "app_pages/embeddings.py", "Embeddings", ":material/scatter_plot:", "embeddings"),
    ("Train", "app_pages/training.py", "Train a tiny transformer", ":material/model_training:", "training"),
]


def _navigation() -> dict[str, list]:
    sections: dict[str, list] = {}
    for section, file, title, icon, url in PAGES:
        sections.setdefault(section, []).append(
            st.Page(str(HERE / file), title=title, icon=icon, url_path=url,
                    default=url == "start"))
    return sections


page = st.navigation(_navigation(), expanded=True)  # every page listed, none behind "View more"
page_style.apply()
projector.apply()
urlstate.load_from_url()
lesson_link.sync_from_url(page.url_path == "lessons")  # before the sidebar: the step's state
# The start page needs no run of the sidebar's text and draws from stored numbers
# (ui/start_example.py): it goes first, so a visitor sees it before torch and the model load.
start_first = page.url_path in ("", "start")
if start_first:
    page.run()

from ui import cache, foreign, sidebar  # noqa: E402 - the engine: torch and the models

cache.start_memory_keeper()
# A closed tab's session is closed FREED_WITHIN_SECONDS later (ui/sessions.py), and the memory
# keeper hands what it held back to the system.
sessions.on_session_end(sessions.current_session_id(), "memory", cache.note_freed)
waiting = busy.BusyLine()
# backpressure: a few runs at once, in order; a new text counts as a long run in the wait shown
with cache.run_queue().slot(on_wait=waiting, computes=sidebar.brings_new_input()):
    waiting.clear()
    st.session_state["selection"] = sidebar.render()
    sidebar.remember_input()
    teacher_tools.render(page.url_path)
    foreign.gate(st.session_state["selection"], page.url_path)  # a model only HF's code runs
    if not start_first:
        page.run()
