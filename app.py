"""Attention Lab: see what happens inside a transformer. Run with `streamlit run app.py`."""

import os

# Offline by default: no hub look-ups (they can hang without a network). A deployment with
# internet that should load hub models by name sets ATTENTION_LAB_ONLINE=1.
if not os.environ.get("ATTENTION_LAB_ONLINE"):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

import streamlit as st  # noqa: E402

from ui import sidebar, urlstate  # noqa: E402

st.set_page_config(page_title="Attention Lab", page_icon="🔍", layout="wide",
                   initial_sidebar_state="expanded")

PAGES = [
    st.Page("app_pages/attention.py", title="Attention", icon="🔥", url_path="attention",
            default=True),
]

page = st.navigation(PAGES)
urlstate.load_from_url()
st.session_state["selection"] = sidebar.render()
page.run()
