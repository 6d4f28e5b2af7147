"""Run-time settings. Hosted mode (a shared server for a class) is one switch:
the environment variable ATTENTION_LAB_HOSTED=1, or `hosted = true` in .streamlit/secrets.toml."""

from __future__ import annotations

import os

# Bound for one text in characters. Beyond the model's context tokens are cut anyway;
# this bound only keeps tokenization and the URL reasonable.
MAX_CHARS_LOCAL = 200_000
MAX_CHARS_HOSTED = 5_000
MAX_URL_TEXT = 1_500  # longer texts are not put in the shareable link
LINE_VIEW_MAX_TOKENS = 60  # the token-to-token line view is unreadable beyond this
MODEL_CACHE_ENTRIES = 3
TRACE_CACHE_ENTRIES = 12


def hosted() -> bool:
    if os.environ.get("ATTENTION_LAB_HOSTED", "").strip().lower() in ("1", "true", "yes"):
        return True
    try:
        import streamlit as st

        return bool(st.secrets.get("hosted", False))
    except Exception:  # no secrets.toml, or secrets unreadable: local mode
        return False


def max_chars() -> int:
    return MAX_CHARS_HOSTED if hosted() else MAX_CHARS_LOCAL
