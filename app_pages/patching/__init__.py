"""The patching page (page.py) and the modules only it uses (change.py, notes.py, pair.py,
seq2seq.py, zoom.py)."""

from .page import figure, render  # noqa: F401 - what the page registry calls
