"""The walkthrough page (page.py) and the modules only it uses (tokens.py)."""

from .page import figure, render  # noqa: F401 - what the page registry calls
