"""Attention Lab served through Streamlit's public ASGI app: `streamlit run asgi.py`.

Streamlit finds `app` below and serves app.py (the pages) with one route of the app's own
beside it: a live class's "has the teacher moved?" signal, which a class member's browser asks
twice a second without running any of the app (ui/class_signal.py). `streamlit run app.py`
still serves the pages, but a class's students would not follow the teacher.
"""

import streamlit as st

from ui import class_signal

app = st.App("app.py", middleware=class_signal.middleware())
