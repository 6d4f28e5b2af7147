"""User text is data, never markup: helpers to show it safely in Streamlit."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])")


def md_escape(text: str) -> str:
    """Escape Markdown (and KaTeX `$`) so `st.markdown`/`st.error` show the text literally.

    Streamlit never renders raw HTML without unsafe_allow_html (which this app never uses);
    this stops **bold**, links, headings and $math$ in user text or paths from rendering.
    """
    return _MD_SPECIAL.sub(r"\\\1", text)


def shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
