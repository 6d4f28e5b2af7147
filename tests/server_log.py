"""The browser tests' servers write their output to a log file; a Streamlit warning in it
(a widget given a default and a session value, a deprecated argument...) fails the test run."""

from __future__ import annotations

import re
from pathlib import Path

WARNING = re.compile(r"WARNING|Warning:|was created with a default value")


def warnings_in(log: Path) -> list[str]:
    """The lines of a server log that are warnings."""
    return [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
            if WARNING.search(line)]
