"""The last line of defence in the app: over the memory ceiling a page says so, no traceback."""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _attention(text: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["text"] = text
    switch(at, "attention")
    return at.run()


def test_over_a_tiny_ceiling_a_new_text_gets_a_message_and_then_runs_once_it_is_lifted(hosted):
    text = "A sentence no other test has run, so it must be computed here."
    hosted.setenv("ATTENTION_LAB_MEMORY_CEILING_MB", "1")  # any process is over 1 MB
    at = _attention(text)
    assert not at.exception
    assert any("short of memory" in w.value for w in at.warning)
    assert not at.get("plotly_chart")  # nothing was computed, nothing drawn
    hosted.setenv("ATTENTION_LAB_MEMORY_CEILING_MB", "0")  # no ceiling: memory "fell"
    at = _attention(text)
    assert not at.exception
    assert not any("short of memory" in w.value for w in at.warning)
    assert at.get("plotly_chart")
