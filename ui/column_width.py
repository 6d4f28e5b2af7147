"""The width of the page's column in the reader's browser, for a figure that must fit it.

Streamlit narrows a figure wider than its column to the column, squeezing its cells; the
server does not know how wide that is. A small component with no HTML of its own measures the
element it sits in and reports the width (rounded to STEP_PX, so a few pixels of scrollbar do
not rerun the page) whenever it changes. Until it has reported (the page's first run, or a
test without a browser) `column_width` returns None and the caller assumes the narrowest
screen. The script sends no data to the browser: nothing user-controlled reaches it.
"""

from __future__ import annotations

import streamlit as st

STEP_PX = 8

_JS = f"""
export default function(component) {{
  const {{ setStateValue, parentElement }} = component;
  const host = parentElement.host || parentElement;
  let sent = null, timer = null;
  const report = () => {{
    const width = Math.floor(host.getBoundingClientRect().width / {STEP_PX}) * {STEP_PX};
    if (width > 0 && width !== sent) {{ sent = width; setStateValue('width', width); }}
  }};
  const observer = new ResizeObserver(() => {{
    clearTimeout(timer); timer = setTimeout(report, 150);
  }});
  observer.observe(host);
  report();
  return () => {{ observer.disconnect(); clearTimeout(timer); }};
}}
"""

_probe = st.components.v2.component("attention_lab_column_width", js=_JS)


def column_width(key: str) -> int | None:
    """The width (px) of the column this is called in, as the browser last reported it."""
    result = _probe(key=key, default={"width": None}, on_width_change=lambda: None)
    width = result.get("width") if hasattr(result, "get") else getattr(result, "width", None)
    return int(width) if isinstance(width, (int, float)) and width > 0 else None
