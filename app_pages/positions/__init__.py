"""The positions page (page.py) and the modules only it uses (relative.py)."""

from .page import figure, render  # noqa: F401 - what the page registry calls
