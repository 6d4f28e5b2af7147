"""The generate page (page.py) and the modules only it uses (seq2seq.py)."""

from .page import figure, render  # noqa: F401 - what the page registry calls
