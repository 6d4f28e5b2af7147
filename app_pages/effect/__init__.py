"""The attention-vs-effect page (page.py) and the modules only it uses (words.py)."""

from .page import figure, render  # noqa: F401 - what the page registry calls
