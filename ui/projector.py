"""Projector mode: larger text and figures for a room, one toggle, kept in the link
(?projector=1). Text grows through the page's base font size; figures through a wrapper around
st.plotly_chart that draws an enlarged copy (the figure given, often shared, is never changed).
"""

from __future__ import annotations

import functools

import plotly.graph_objects as go
import streamlit as st

KEY = "projector"
SCALE = 1.35  # figure fonts and heights
BASE_FONT_PX = 22  # Streamlit's default is 16
SIDEBAR_PX = 300  # Streamlit's sidebar width: fixed in px, while its text grows with the font
# The open sidebar widens with the font, so page names and the model and example boxes are not
# cut ("Generate, step by s…"); a collapsed sidebar is left alone.
SIDEBAR_CSS = ("section[data-testid='stSidebar'][data-collapsed='false'] { width: "
               f"{round(SIDEBAR_PX * BASE_FONT_PX / 16)}px !important; max-width: none !important; }}")
CSS = (f"<style>html {{ font-size: {BASE_FONT_PX}px; }} "
       "[data-testid='stMainBlockContainer'] { max-width: 100%; } "
       f"{SIDEBAR_CSS}</style>")


def on() -> bool:
    return bool(st.session_state.get(KEY))


def enlarged(fig: go.Figure) -> go.Figure:
    """A copy of the figure with larger fonts and height."""
    big = go.Figure(fig)
    size = (fig.layout.font.size or 12) * SCALE
    big.update_layout(font_size=size, title_font_size=size * 1.2)
    if fig.layout.height:
        big.update_layout(height=int(fig.layout.height * SCALE))
    if fig.layout.width:  # a figure sized to its content (viz/style.py heatmap_size) keeps
        big.update_layout(width=int(fig.layout.width * SCALE))  # its square cells
    margin = fig.layout.margin
    big.update_layout(margin={side: int(getattr(margin, side) * SCALE) for side in "lrtb"
                              if getattr(margin, side) is not None})  # room for larger labels
    big.update_xaxes(tickfont_size=size)
    big.update_yaxes(tickfont_size=size)
    for trace in big.data:  # text set to a fixed size (in-cell labels, point names) grows too;
        _enlarge_textfont(trace)  # text left to plotly's fit grows with the larger font above
    return big


def _enlarge_textfont(trace) -> None:
    font = getattr(trace, "textfont", None)
    size = getattr(font, "size", None) if font is not None else None
    if isinstance(size, (int, float)) and not isinstance(size, bool):
        trace.textfont.size = size * SCALE
    elif isinstance(size, (list, tuple)) and all(isinstance(v, (int, float)) for v in size):
        trace.textfont.size = [v * SCALE for v in size]


def install() -> None:
    """Wrap plotly_chart once per process (st.plotly_chart and columns' and containers'
    .plotly_chart); sessions without projector mode are untouched."""
    from streamlit.delta_generator import DeltaGenerator

    original = DeltaGenerator.plotly_chart
    if getattr(original, "_projector", False):
        return

    @functools.wraps(original)
    def plotly_chart(self, figure_or_data, *args, **kwargs):
        if on() and isinstance(figure_or_data, go.Figure):
            figure_or_data = enlarged(figure_or_data)
        return original(self, figure_or_data, *args, **kwargs)

    plotly_chart._projector = True
    DeltaGenerator.plotly_chart = plotly_chart
    st.plotly_chart = functools.partial(plotly_chart, st._main)


def apply() -> None:
    """Take the setting from the link once, then send the larger font when it is on."""
    if "_projector_loaded" not in st.session_state:
        st.session_state["_projector_loaded"] = True
        st.session_state.setdefault(KEY, st.query_params.get(KEY) == "1")
    if on():
        st.html(CSS)
