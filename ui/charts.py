"""One place for the plotly toolbar settings every page uses."""

from __future__ import annotations

import streamlit as st

from viz.export import plotly_config

FORMAT_KEY = "sb_image_format"
FORMATS = ("PNG", "SVG")


def chart_config(filename: str = "attention-lab") -> dict:
    """The `config=` for st.plotly_chart: the camera button saves the format chosen in the
    sidebar (PNG at twice the screen resolution, or SVG for slides and papers)."""
    fmt = st.session_state.get(FORMAT_KEY, FORMATS[0])
    return plotly_config(fmt.lower() if fmt in FORMATS else "png", filename)
