"""Opening a page of the app in an AppTest the way a link does: the model, the text and any
page setting in the query, then the page itself (the start page reads the link first). Or the
way a user does: the start page first, then the sidebar's model and text, then the page. And
the words a page shows, as one string."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def switch(at: AppTest, page: str) -> AppTest:
    """Open the page declared as `page` (its path, "logit-lens", or its module, "logit_lens")
    on the next run, as its link in the sidebar does. The app's pages are functions
    (st.Page(render), ui/page_registry.py) and AppTest.switch_page finds only pages that are
    files, so this asks for the page the way Streamlit names it: the hash of its path."""
    from teaching.pages import BY_PATH, PAGE_SPECS

    path = page if page in BY_PATH else next(
        (spec.path for spec in PAGE_SPECS if spec.module == page), None)
    if path is None:
        raise ValueError(f"no page is declared as {page!r}")
    at._page_hash = calc_hash(path)  # what AppTest.switch_page sets for a page that is a file
    return at


def open_page(page: str, model: str, text: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = model
    if text is not None:
        at.query_params["text"] = text
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    switch(at, page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_link(page: str, timeout: float = 300, **params) -> AppTest:
    """`page` opened straight from a link (`/page?model=…&text=…`): the query, then the page
    on the first run. Exceptions are the caller's to read: a refused link is a test too."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for key, value in params.items():
        at.query_params[key] = str(value)
    switch(at, page)
    return at.run()


def start_app(text: str | None = None) -> AppTest:
    """The start page, with `text` typed into the sidebar."""
    at = AppTest.from_file(APP, default_timeout=300).run()
    if text is not None:
        at.text_area(key="sb_text").input(text).run()
    assert not at.exception
    return at


def open_with_sidebar(page: str, model: str | None = None, text: str | None = None,
                      params: dict | None = None, pair: str | None = None) -> AppTest:
    """`page` reached as a user reaches it: the app opened (with `params` in its link), the
    model picked and the text (and the second text, `pair`) typed in the sidebar, then the
    page."""
    at = AppTest.from_file(APP, default_timeout=300)
    if params:
        at.query_params.update(params)
    at.run()
    if model is not None:
        at.selectbox(key="sb_model_choice").set_value(model).run()
    if text is not None:
        at.text_area(key="sb_text").input(text).run()
    if pair is not None:
        at.text_input(key="sb_pair").input(pair).run()
    switch(at, page).run()
    assert not at.exception
    return at


def page_text(at: AppTest, kinds=("markdown", "caption", "info", "warning"),
              unescape: bool = True) -> str:
    """Every element of these kinds on the page, joined; `unescape` drops Markdown's
    backslash escapes."""
    said = " ".join(str(e.value) for kind in kinds for e in at.get(kind))
    return said.replace("\\", "") if unescape else said


def open_lesson(lesson_id: str | None = None, step: int = 1, **params) -> AppTest:
    """The lessons page: the list, or one lesson at one step as a class link opens it (with
    any other link parameters given, such as a setting of the step's page)."""
    at = AppTest.from_file(APP, default_timeout=600)
    if lesson_id is not None:
        at.query_params["lesson"] = lesson_id
        at.query_params["step"] = str(step)
    for key, value in params.items():
        at.query_params[key] = str(value)
    switch(at, "lessons")
    return at.run()


def open_view(view) -> AppTest:
    """A ViewState (ui/view_state.py) opened as its link opens it: its parameters in the
    query, then its page."""
    at = AppTest.from_file(APP, default_timeout=300)
    for key, value in view.params().items():
        at.query_params[key] = value
    at.run()
    switch(at, view.page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_view(at: AppTest, page: str):
    """The view the page on screen used on its last run, read from the session as
    ui/view_state.current reads it (the sidebar's model and texts, the settings it used)."""
    from teaching.pages import BY_PATH
    from ui.view_state import USED_KEY, ViewState

    spec, state = BY_PATH[page], at.session_state
    used = state[USED_KEY].get(page, set()) if USED_KEY in state else set()
    values = {name: state[spec.key(name)] for name in used if spec.key(name) in state}
    model = state["sb_model_choice"]
    return ViewState(page, model, state["sb_text"], state["sb_pair"], values).normal()
