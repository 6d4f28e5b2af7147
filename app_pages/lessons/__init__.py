"""The lessons page (page.py) and the modules only it uses (concept_check.py, course_list.py,
progress.py)."""

from .page import render  # noqa: F401 - what the page registry calls
