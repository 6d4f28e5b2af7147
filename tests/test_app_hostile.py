"""Hostile input on every page (AppTest): no exception, nothing rendered as HTML, and a clear
message where the text was cut or is empty."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(p.name for p in (ROOT / "app_pages").glob("*.py") if p.name != "__init__.py")

HOSTILE = {
    "empty": "",
    "whitespace": "   \n\t  ",
    "100k": "word " * 20_000,
    "emoji": "😀🚀👩‍👩‍👧 émoji ﷽",
    "cjk": "日本語のテキストと中文文本",
    "rtl": "שלום עולם مرحبا بالعالم",
    "zero_width": "zero\u200bwidth\u200d\u2060\ufeffjoin",
    "control": "ctrl\x00\x07\x1b[31mchars\x7f",
    "script": "<script>alert(1)</script>",
    "img": '<img src=x onerror="alert(1)">',
    "markdown": "**bold** [x](javascript:alert(1)) # heading\n---\n| a | b |",
    "latex": "$\\frac{1}{0}$ and $$x^2$$ \\(y\\)",
}
# Every text on the main page; a representative subset on the others (time on 2 cores).
SUBSET = ["empty", "100k", "img", "rtl", "control", "latex"]
CASES = [("attention.py", name) for name in HOSTILE] + [
    (page, name) for page in PAGES if page != "attention.py" for name in SUBSET]


def _messages(at) -> str:
    parts = []
    for kind in ("warning", "info", "caption", "error"):
        parts += [el.value for el in getattr(at, kind)]
        parts += [el.value for el in getattr(at.sidebar, kind)]
    return " ".join(str(p) for p in parts)


@pytest.mark.parametrize(("page", "name"), CASES)
def test_hostile_text_on_every_page(page, name):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.session_state["sb_text"] = HOSTILE[name]
    at.run()
    at.switch_page(f"app_pages/{page}").run()
    assert not at.exception, (page, name, at.exception)
    assert not at.get("html"), "nothing may be rendered as raw HTML"
    assert not any(getattr(el.proto, "allow_html", False) for el in at.markdown)
    messages = _messages(at).lower()
    if name in ("empty", "whitespace") and page != "training.py":  # training has its own text
        assert "type some text" in messages or "type two texts" in messages, messages[:300]
    if name == "100k" and page in ("attention.py", "walkthrough.py"):
        assert "dropped" in messages or "cut" in messages, messages[:300]
