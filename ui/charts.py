"""One place for the plotly toolbar settings every page uses: the camera button saves the format
chosen in the sidebar, named after what the figure shows and cropped to the figure."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from viz.export import plotly_config

from .view_state import chosen

FORMAT_KEY = "sb_image_format"
FORMATS = ("PNG", "SVG")
NAME_CHARS = 90  # a file name's length, before the extension
SHORT_KEYS = {"layer": "L", "head": "H"}  # minilm_attention_L2_H5.png
# Plotly's defaults where a figure leaves a margin to its template.
DEFAULT_MARGIN = dict(l=80, r=80, t=100, b=80)
TITLE_CHAR_PX, SUBTITLE_CHAR_PX = 10.0, 7.0  # generous widths at 17 px and 12 px
MIN_EXPORT_PX = 360


def slug(text: str) -> str:
    """Lower-case letters, digits and single dashes: safe in a file name on every system."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def _model_part() -> str:
    """The model in use, as the sidebar names it: a trained model by its label, a folder by
    its name (never a server path)."""
    name = getattr(chosen(), "model_name", "") or ""
    for label, directory in st.session_state.get("trained_models", {}).items():
        if directory == name:
            return slug(label)
    if name.startswith(("/", "~", ".")) or name.count("/") > 1:
        name = Path(name).name
    return slug(name)


def export_name(view: str, *details: str, **where) -> str:
    """model_view[_detail][_L<layer>_H<head>...]: what the figure shows, as a file name
    without its extension. A detail (a figure's title) loses a first word that repeats the
    view; `where` values of None are left out."""
    view = slug(view)
    parts = [_model_part(), view]
    for detail in details:
        detail = slug(detail)
        parts.append(detail[len(view) + 1:] if detail.startswith(view + "-") else detail)
    for key, value in where.items():
        if value is not None:
            parts.append(f"{SHORT_KEYS.get(key, slug(key) + '-')}{slug(value)}")
    name = "_".join(p for p in parts if p) or "attention-lab"
    return name[:NAME_CHARS].rstrip("-_")


def _title(layout) -> str:
    """A figure's title as plain text ("" without one)."""
    title = getattr(layout, "title", None)
    return re.sub(r"<[^>]+>", " ", title.text or "") if title is not None else ""


def _margin(layout) -> dict:
    margin = layout.margin
    return {side: getattr(margin, side) if getattr(margin, side) is not None else px
            for side, px in DEFAULT_MARGIN.items()}


def _text_px(layout) -> float:
    """How wide the title and subtitle need the figure to be."""
    title = _title(layout)
    sub = layout.title.subtitle.text if layout.title and layout.title.subtitle else ""
    sub_px = max((len(re.sub(r"<[^>]+>", "", line)) for line in (sub or "").split("<br>")),
                 default=0) * SUBTITLE_CHAR_PX
    return max(len(title) * TITLE_CHAR_PX, sub_px)


def export_size(fig) -> tuple[int, int] | None:
    """(width, height) that holds the figure and little else, or None to keep the size on
    screen. A figure with its own width keeps it; a heatmap with square cells (y anchored to
    x) stretched to the page's width is cut down to its plot, margins and title; any other
    figure already fills its width."""
    layout = getattr(fig, "layout", None)
    if layout is None or not layout.height:
        return None
    if layout.width:
        return int(layout.width), int(layout.height)
    heatmaps = [t for t in fig.data if t.type in ("heatmap", "image")]
    if layout.yaxis.scaleanchor != "x" or len(heatmaps) != 1 or heatmaps[0].z is None:
        return None
    shape = getattr(heatmaps[0].z, "shape", None) or (len(heatmaps[0].z),
                                                      len(heatmaps[0].z[0]))
    rows, cols = shape[0], shape[1]
    margin = _margin(layout)
    plot_h = layout.height - margin["t"] - margin["b"]
    if plot_h <= 0 or rows <= 0:
        return None
    width = margin["l"] + margin["r"] + plot_h * cols / rows
    return int(max(width, _text_px(layout), MIN_EXPORT_PX)), int(layout.height)


def chart_config(view: str = "figure", fig=None, *details: str, **where) -> dict:
    """The `config=` for st.plotly_chart: the camera button saves the format chosen in the
    sidebar (PNG at twice the screen resolution, or SVG), named by `export_name`:
    chart_config("qk", fig, layer=2, head=5) -> minilm_qk_L2_H5.png, and
    chart_config("attention", fig, "Layer 2, head 5") -> minilm_attention_layer-2-head-5.png;
    with a figure and nothing else, its title is the detail. With `fig`, the saved picture is
    cropped to the figure (see export_size)."""
    if fig is not None and not details and not where:  # the figure's title says what it shows
        details = tuple(t for t in (_title(getattr(fig, "layout", None)),) if t)
    fmt = st.session_state.get(FORMAT_KEY, FORMATS[0])
    config = plotly_config(fmt.lower() if fmt in FORMATS else "png",
                           export_name(view, *details, **where))
    size = export_size(fig) if fig is not None else None
    if size is not None:
        config["toImageButtonOptions"].update(width=size[0], height=size[1])
    return config
