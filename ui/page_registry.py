"""The app's pages as Streamlit pages, built from their declarations (teaching/pages.py):
navigation, running the page on screen (and writing its link), and running a page inside a
lesson step."""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from teaching.pages import BY_PATH, PAGE_SPECS

from .view_state import page_view

APP_PAGES = Path(__file__).resolve().parent.parent / "app_pages"
START = PAGE_SPECS[0].path  # the first page is the start page, at "/"


def page_file(path: str) -> Path:
    return APP_PAGES / f"{BY_PATH[path].module}.py"


def pages() -> dict:
    """Page path -> st.Page, in the declared order."""
    return {spec.path: st.Page(str(page_file(spec.path)), title=spec.title, icon=spec.icon,
                               url_path=spec.path, default=spec.path == START)
            for spec in PAGE_SPECS}


def sections(objects: dict) -> dict[str, list]:
    """The sidebar's sections, each with its pages."""
    out: dict[str, list] = {}
    for spec in PAGE_SPECS:
        out.setdefault(spec.section, []).append(objects[spec.path])
    return out


def path_of(page) -> str:
    """The declared path of the st.Page on screen ("" is the start page)."""
    return page.url_path or START


def run(page) -> None:
    """Run the page on screen, then put the settings it used in its link (also when the page
    stopped early with a message)."""
    path = path_of(page)
    try:
        page.run()
    except StopException:  # st.stop(): the page said why it stopped; a jump leaves the link
        _write_link(path)
        raise
    _write_link(path)


def _write_link(path: str) -> None:
    if BY_PATH[path].settings:
        page_view(path).write_link()


def run_in_lesson(path: str) -> None:
    """Run one page inside a lesson step, as st.navigation runs it (its widgets keep their
    own keys); the file comes from the page's declaration."""
    runpy.run_path(str(page_file(path)), run_name="__main__")


def page_link(container, path: str, label: str | None = None, **kwargs) -> None:
    """A link to a page (its title and icon by default), in `container`: the model, the
    texts and every setting stay as they are in this session."""
    spec = BY_PATH[path]
    container.page_link(f"app_pages/{spec.module}.py", label=label or f"{spec.title} ▸",
                        icon=kwargs.pop("icon", spec.icon), **kwargs)
