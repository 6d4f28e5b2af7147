"""Projector mode: larger text and figures for a room, one toggle, kept in the link
(?projector=1). Text grows through the page's base font size; figures through a wrapper around
st.plotly_chart that draws an enlarged copy (the figure given, often shared, is never changed).

The sidebar is hidden while it is on, so the page gets the whole screen (on a 1024 px
projector an open sidebar took 410 px and left the main heatmap a 100 px strip). A button at
the top of the page brings it back, and hides it again. Streamlit's own collapse control
cannot do this per session: the page config's `initial_sidebar_state` is one per app run and
the browser keeps a reader's last click on the control in its local storage, which then wins.
"""

from __future__ import annotations

import functools
import math

import plotly.graph_objects as go
import streamlit as st

from viz.style import ROOM_NARROW_PX, ROOM_SCALE, label_px, room_size, room_ticks

KEY = "projector"
SIDEBAR_KEY = "projector_sidebar"  # session state: True once the sidebar was asked back
SCALE = ROOM_SCALE  # figure fonts and margins
BASE_FONT_PX = 22  # Streamlit's default is 16
SIDEBAR_PX = 300  # Streamlit's sidebar width: fixed in px, while its text grows with the font
# The open sidebar widens with the font, so page names and the model and example boxes are not
# cut ("Generate, step by s…"); a collapsed sidebar is left alone.
SIDEBAR_CSS = ("section[data-testid='stSidebar'][data-collapsed='false'] { width: "
               f"{round(SIDEBAR_PX * BASE_FONT_PX / 16)}px !important; max-width: none !important; }}")
# The page's side padding (Streamlit's 5rem would be 110 px a side at this font) made small.
PAGE_CSS = ("[data-testid='stMainBlockContainer'] { max-width: 100%; padding-left: 24px;"
            " padding-right: 24px; padding-top: 4rem; }")
# A page's title as large as in normal mode (44 px), not 1.4 times larger with little room
# above and below it: on a 720 px high screen the title alone took 120 px above the figure.
TITLE_CSS = ("[data-testid='stMain'] h1 { font-size: 2rem; padding-top: 0.25rem;"
             " padding-bottom: 0.25rem; }")
CSS = (f"<style>html {{ font-size: {BASE_FONT_PX}px; }} {PAGE_CSS} {SIDEBAR_CSS} {TITLE_CSS}"
       "</style>")
# While the sidebar is hidden, the button that brings it back sits in the bar at the top of the
# screen (empty on its left then), so the page starts right under the bar. Over the bar, which
# Streamlit draws at z-index 999990.
HIDE_SIDEBAR_CSS = ("<style>section[data-testid='stSidebar'] { display: none !important; }"
                    " .st-key-projector_sidebar_btn { position: fixed; top: 14px; left: 24px;"
                    " width: auto; z-index: 999991; }</style>")


def on() -> bool:
    return bool(st.session_state.get(KEY))


def enlarged(fig: go.Figure) -> go.Figure:
    """A copy of the figure with larger fonts, margins and height. A figure sized to its
    content (a width and a height) is sized for the room by viz/style.py `room_size`: a
    page's main figure fills the page with its cells still square, and a heatmap's labels are
    as large as its cells allow, thinned when they would overlap."""
    big = go.Figure(fig)
    template = fig.layout.template.layout.font.size if fig.layout.template else None
    base = fig.layout.font.size or template or 12  # the size it is drawn at
    size = base * SCALE
    # the subtitle has a font of its own (plotly's ~12 px): it grows too, its lines (wrapped for
    # the normal figure) fitting the larger figure and the top margin grown by SCALE
    big.update_layout(font_size=size, title_font_size=size * 1.2,
                      title_subtitle_font_size=size * 0.85)
    margin = fig.layout.margin
    big.update_layout(margin={side: int(getattr(margin, side) * SCALE) for side in "lrtb"
                              if getattr(margin, side) is not None})  # room for larger labels
    big.update_xaxes(tickfont_size=size)
    big.update_yaxes(tickfont_size=size)
    if fig.layout.width and fig.layout.height:  # sized to its content (viz/style.py
        drawn = fig.layout.template.layout.margin if fig.layout.template else None
        big.update_layout(**room_size(  # heatmap_size): its square cells grow to the page
            fig.layout.width, fig.layout.height,
            {side: next((v for v in (getattr(margin, side), getattr(drawn, side, None))
                         if v is not None), 0) for side in "lrtb"}))
        _thin_heatmap_ticks(big, base, size)
    elif fig.layout.height:
        big.update_layout(height=int(fig.layout.height * SCALE))
    for trace in big.data:  # text set to a fixed size (in-cell labels, point names) grows too;
        _enlarge_textfont(trace)  # text left to plotly's fit grows with the larger font above
    return big


def _thin_heatmap_ticks(fig: go.Figure, base: float, size: float) -> None:
    """One heatmap on category axes labelled by plotly: its labels as large as its cells allow
    (from `base` up to `size`), every step-th when even `base` does not fit (viz/style.py
    room_ticks), so no label overlaps its neighbour. Only the cells shown count (a map zoomed
    by its axis range). An axis whose figure chose its own labels (tickvals: a zoom's changed
    positions, the attention page's thinning) keeps every one of them, its font as large as
    their closest spacing allows. Hover still names every cell."""
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    if len(heatmaps) != 1 or len(fig.data) != 1 or heatmaps[0].x is None \
            or heatmaps[0].y is None:
        return
    trace, layout, margin = heatmaps[0], fig.layout, fig.layout.margin
    # x as on the narrowest room screen (the figure is narrowed there, never made shorter)
    plot = {"x": min(layout.width, ROOM_NARROW_PX) - margin.l - margin.r,
            "y": layout.height - margin.t - margin.b}
    for axis_name, labels in (("x", list(trace.x)), ("y", list(trace.y))):
        axis = layout[f"{axis_name}axis"]
        if axis.showticklabels is False or not all(isinstance(v, str) for v in labels):
            continue
        # the labels' angle from their axis: y labels are written across it; x labels
        # slanted by their tickangle, or along the axis when it has none
        angle = 90 if axis_name == "y" else abs(axis.tickangle or 0)
        first, last = _shown(axis.range, len(labels))
        if axis.tickvals is not None:  # the figure's own labels: all kept
            where = sorted(labels.index(v) for v in axis.tickvals if v in labels)
            gap = min((b - a for a, b in zip(where, where[1:])), default=last - first + 1)
            font, _ = room_ticks(max(1, (last - first + 1) // max(gap, 1)), plot[axis_name],
                                 size, base, angle, max(map(label_px, labels), default=0))
            axis.update(tickfont_size=font)
            continue
        font, step = room_ticks(last - first + 1, plot[axis_name], size, base, angle,
                                max(map(label_px, labels), default=0))
        shown = labels[first:last + 1:step]
        axis.update(tickmode="array", tickvals=shown, ticktext=shown, tickfont_size=font)


def _shown(axis_range, n: int) -> tuple[int, int]:
    """The first and last category positions an axis shows: its range (either way round,
    cells centred on whole numbers), else all n."""
    if axis_range is None or len(axis_range) != 2:
        return 0, n - 1
    low, high = sorted(float(v) for v in axis_range)
    return max(0, math.ceil(low)), min(n - 1, math.floor(high))


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


def _toggle_sidebar() -> None:
    st.session_state[SIDEBAR_KEY] = not st.session_state.get(SIDEBAR_KEY, False)


def apply() -> None:
    """Take the setting from the link once, then send the larger font when it is on, hide the
    sidebar unless it was asked back, and put the button that shows or hides it on top of the
    page."""
    if "_projector_loaded" not in st.session_state:
        st.session_state["_projector_loaded"] = True
        st.session_state.setdefault(KEY, st.query_params.get(KEY) == "1")
    if not on():
        st.session_state.pop(SIDEBAR_KEY, None)  # turned on again: the sidebar hides again
        return
    st.html(CSS)
    shown = st.session_state.get(SIDEBAR_KEY, False)
    if not shown:
        st.html(HIDE_SIDEBAR_CSS)
    st.button("Hide the sidebar" if shown else "Show the sidebar", key="projector_sidebar_btn",
              icon=":material/menu:", on_click=_toggle_sidebar,
              help="Projector mode gives the page the whole screen; the sidebar holds the "
              "model, the text, the pages and the switch that turns projector mode off.")
