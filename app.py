"""Attention Lab: see what happens inside a transformer. Run with `streamlit run app.py`."""

import os
from pathlib import Path

# Offline by default: no hub look-ups (they can hang without a network). A deployment with
# internet that should load hub models by name sets ATTENTION_LAB_ONLINE=1.
if not os.environ.get("ATTENTION_LAB_ONLINE"):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

import streamlit as st  # noqa: E402

from ui import sidebar, urlstate  # noqa: E402

st.set_page_config(page_title="Attention Lab", page_icon="🔍", layout="wide",
                   initial_sidebar_state="expanded")

HERE = Path(__file__).resolve().parent

# (section, file, title, icon, url path). A page appears once its file exists.
PAGES = [
    ("Explore", "app_pages/attention.py", "Attention", "🔥", "attention"),
    ("Explore", "app_pages/heads.py", "Head statistics", "📊", "heads"),
    ("Explore", "app_pages/compare.py", "Compare two inputs", "↔️", "compare"),
    ("Explore", "app_pages/ablation.py", "Head ablation", "✂️", "ablation"),
    ("Explore", "app_pages/logit_lens.py", "Logit lens", "🔭", "logit-lens"),
    ("Learn", "app_pages/walkthrough.py", "Forward pass, step by step", "🧭", "walkthrough"),
    ("Learn", "app_pages/positions.py", "Positional encodings", "〰️", "positions"),
    ("Learn", "app_pages/embeddings.py", "Embeddings", "🗺️", "embeddings"),
    ("Train", "app_pages/training.py", "Train a tiny transformer", "🏋️", "training"),
]


def _navigation() -> dict[str, list]:
    sections: dict[str, list] = {}
    for section, file, title, icon, url in PAGES:
        if (HERE / file).is_file():
            sections.setdefault(section, []).append(
                st.Page(str(HERE / file), title=title, icon=icon, url_path=url,
                        default=url == "attention"))
    return sections


page = st.navigation(_navigation())
urlstate.load_from_url()
st.session_state["selection"] = sidebar.render()
page.run()
