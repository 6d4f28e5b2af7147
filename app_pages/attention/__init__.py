"""The attention page (page.py) and the modules only it uses (score_parts.py, token_lines.py,
window.py)."""

from .page import figure, render  # noqa: F401 - what the page registry calls
