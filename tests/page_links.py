"""Opening a page of the app in an AppTest the way a link does: the model, the text and any
page setting in the query, then the page itself (the start page reads the link first)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def open_page(page: str, model: str, text: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = model
    if text is not None:
        at.query_params["text"] = text
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_lesson(lesson_id: str | None = None, step: int = 1) -> AppTest:
    """The lessons page: the list, or one lesson at one step as a class link opens it."""
    at = AppTest.from_file(APP, default_timeout=600)
    if lesson_id is not None:
        at.query_params["lesson"] = lesson_id
        at.query_params["step"] = str(step)
    at.switch_page("app_pages/lessons.py")
    return at.run()
