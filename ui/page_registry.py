"""The app's pages as Streamlit pages, built from their declarations (teaching/pages.py):
navigation, running the page on screen (and writing its link), and running a page inside a
lesson step.

Each page is a module in app_pages/ whose `render(selection)` draws it, given the sidebar's
choice (model, text, second text; None on the start page, which draws before the sidebar);
importing the module draws nothing. The module is imported when its page first runs, not when navigation is built, so
the start page still draws before torch and the models load (app.py)."""

from __future__ import annotations

import contextvars
import importlib

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from teaching.pages import BY_PATH, PAGE_SPECS

from .view_state import page_view

PACKAGE = "app_pages"  # where the declared page modules live
START = PAGE_SPECS[0].path  # the first page is the start page, at "/"
SHOWN_KEY = "_page_shown"  # the page the last whole run showed
CAME_FROM_KEY = "_page_came_from"  # the page before this run's (None: the session's first run)
# The sidebar's choice for the page `run` is running: st.Page calls a page with no arguments,
# so `run` sets it here, for that call only, and the page's renderer hands it to render().
_GIVEN: contextvars.ContextVar = contextvars.ContextVar("page_selection", default=None)


def module_name(path: str) -> str:
    """The importable name of the module that draws the page declared at `path`."""
    return f"{PACKAGE}.{BY_PATH[path].module}"


def render(path: str, selection) -> None:
    """Draw the page declared at `path` here for the sidebar's `selection` (its module is
    imported on first use)."""
    importlib.import_module(module_name(path)).render(selection)


def _renderer(path: str):
    def draw() -> None:
        render(path, _GIVEN.get())

    draw.__name__ = BY_PATH[path].module
    return draw


def page(path: str):
    """The st.Page of one declared page: what st.navigation, st.switch_page and
    st.page_link are given (built here only, from the declaration)."""
    spec = BY_PATH[path]
    return st.Page(_renderer(path), title=spec.title, icon=spec.icon, url_path=spec.path,
                   default=spec.path == START)


def pages() -> dict:
    """Page path -> st.Page, in the declared order."""
    return {spec.path: page(spec.path) for spec in PAGE_SPECS}


def sections(objects: dict) -> dict[str, list]:
    """The sidebar's sections, each with its pages."""
    out: dict[str, list] = {}
    for spec in PAGE_SPECS:
        out.setdefault(spec.section, []).append(objects[spec.path])
    return out


def path_of(page) -> str:
    """The declared path of the st.Page on screen ("" is the start page)."""
    return page.url_path or START


def run(page, selection=None) -> None:
    """Run the page on screen for the sidebar's `selection`, then put the settings it used in
    its link (also when the page stopped early with a message)."""
    path = path_of(page)
    state = st.session_state
    state[CAME_FROM_KEY], state[SHOWN_KEY] = state.get(SHOWN_KEY), path
    given = _GIVEN.set(selection)
    try:
        page.run()
    except StopException:  # st.stop(): the page said why it stopped (a message, a wait); the
        _write_link(path, stopped=True)  # settings it did not reach stay as the link has them
        raise
    finally:
        _GIVEN.reset(given)
    _write_link(path)


def came_from() -> str | None:
    """The page the run before this one showed (this page's own path when the learner stayed on
    it; None on the session's first run)."""
    return st.session_state.get(CAME_FROM_KEY)


def _write_link(path: str, stopped: bool = False) -> None:
    if BY_PATH[path].settings:
        page_view(path).write_link(stopped)


def run_in_lesson(path: str, selection) -> None:
    """Draw one page inside a lesson step, as st.navigation runs it (its widgets keep their
    own keys): the page module's own `render(selection)`."""
    render(path, selection)


def switch_to(path: str, **kwargs) -> None:
    """st.switch_page to the page declared at `path` (keyword arguments: st.switch_page's)."""
    st.switch_page(page(path), **kwargs)


def page_link(container, path: str, label: str | None = None, **kwargs) -> None:
    """A link to a page (its title and icon by default), in `container`: the model, the
    texts and every setting stay as they are in this session."""
    spec = BY_PATH[path]
    container.page_link(page(path), label=label or f"{spec.title} ▸",
                        icon=kwargs.pop("icon", spec.icon), **kwargs)
