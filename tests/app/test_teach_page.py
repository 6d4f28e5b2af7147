"""The Teach page (/teach): its sample lesson file keeps every comment on a short line of its
own that starts with # (a narrow screen wraps long lines, and a wrapped comment without its #
reads as code), and it is the same lesson as the file it shows."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from ui.lesson_library import EXAMPLE_FILE  # noqa: E402

pytestmark = pytest.mark.app

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _outside_strings(text: str) -> list[str]:
    lines, in_string = [], False
    for line in text.splitlines():
        opens = line.count('"""') % 2 == 1
        if not in_string and not opens:
            lines.append(line)
        in_string ^= opens
    return lines


def test_the_sample_lesson_file_has_short_comment_lines_of_their_own():
    at = AppTest.from_file(APP, default_timeout=300)
    switch(at, "teach")
    at.run()
    assert not at.exception
    shown = next(c.value for c in at.code if c.language == "toml" and "[[steps]]" in c.value)
    original = EXAMPLE_FILE.read_text(encoding="utf-8")
    assert tomllib.loads(shown) == tomllib.loads(original)  # the same lesson
    commented = [line for line in _outside_strings(shown) if "#" in line]
    assert len(commented) >= original.count("#") // 2  # the comments are all still there
    for line in commented:
        assert line.startswith("# ") or line == "#", line
        assert len(line) <= 46, line  # what an 800-pixel-wide window shows
