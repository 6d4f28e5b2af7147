"""The app's one piece of CSS, a constant: nothing the user typed ever reaches it.

While a rerun is on its way, Streamlit fades the elements it is about to replace ("stale")
with a one-second opacity transition that starts after half a second. The browser repaints
every element on the page for every frame of that fade: on a 2-core machine serving a class,
eight pages fading at once cost more CPU than the server's own work (bench/bench_load.py).
Here the same dimming happens after the same half second, in one step: one repaint.
"""

from __future__ import annotations

import streamlit as st

STALE_IN_ONE_STEP = (
    '<style>[data-testid="stElementContainer"][data-stale="true"]'
    "{transition: opacity 0s linear 0.5s !important;}</style>"
)


def apply() -> None:
    """Send the style block; a <style>-only st.html takes no space on the page."""
    st.html(STALE_IN_ONE_STEP)
