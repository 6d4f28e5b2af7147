"""Adding a page is one new file plus one declaration line (a `PageSpec` in
teaching/pages.py's PAGE_SPECS). Shown with a throwaway page written to a temporary folder
and declared for this test only: it gets navigation, a link that sets it up, a recording, and
a lesson step, with nothing else written for it."""

from __future__ import annotations

import sys
from pathlib import Path

import app_pages
from page_links import open_view, shown_view

from teaching import pages
from teaching.draft import to_toml
from teaching.format import parse_lesson
from teaching.pages import PageSpec, Setting
from ui import page_registry
from ui.view_state import ViewState

PAGE = '''"""A glossary: one word, explained."""

import streamlit as st

from ui.view_state import page_view

VIEW = page_view("glossary")
WORDS = {"head": "One of the attention units of a layer.", "layer": "One block of the model."}


def render(selection) -> None:
    st.title("Glossary", anchor=False)
    VIEW.setdefault("word")
    word = st.radio("Word", list(WORDS), key=VIEW.key("word"))
    st.markdown(f"**{word}**: {WORDS[word]}")
'''


def test_a_new_page_is_one_file_and_one_declaration(tmp_path, monkeypatch, request):
    (tmp_path / "glossary.py").write_text(PAGE, encoding="utf-8")  # the one new file
    spec = PageSpec("glossary", "glossary", "Glossary", "Learn",  # the one line
                    ":material/menu_book:", "gl",
                    (Setting("word", "choice", "head", ("head", "layer"), url="word"),))
    # The new file is app_pages/glossary.py; for this test it lives in a temporary folder
    # that the app_pages package also searches, and it is forgotten afterwards.
    monkeypatch.setattr(app_pages, "__path__", [*app_pages.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "app_pages.glossary", raising=False)
    request.addfinalizer(lambda: sys.modules.pop("app_pages.glossary", None))
    # What importing teaching/pages.py derives from PAGE_SPECS, done again for this test:
    monkeypatch.setattr(page_registry, "PAGE_SPECS", pages.PAGE_SPECS + (spec,))
    monkeypatch.setitem(pages.BY_PATH, spec.path, spec)
    monkeypatch.setitem(pages.PAGES, spec.path, (spec.path, spec.title, dict(spec.by_name)))

    view = ViewState("glossary", "tiny-chars", "abcabc", "", {"word": "layer"})
    at = open_view(view)  # its link sets it up
    assert [t.value for t in at.title] == ["Glossary"]
    assert at.radio(key="gl_word").value == "layer"
    assert "One block of the model." in at.markdown[-1].value
    assert shown_view(at, "glossary") == view
    assert at.query_params["word"] in ("layer", ["layer"])

    at.button(key="teach_record").click().run()  # "Record this view as a step"
    step = at.session_state["lesson_draft"]["steps"][-1]
    assert (step["page"], step["settings"], step["model"]) == ("glossary", {"word": "layer"},
                                                               "tiny-chars")
    lesson = parse_lesson(to_toml("Words", "", [step]).encode(), "words", "upload")
    assert lesson.steps[0].page == "glossary" and lesson.steps[0].settings == {"word": "layer"}
    assert page_registry.module_name("glossary") == "app_pages.glossary"
    assert Path(sys.modules["app_pages.glossary"].__file__) == tmp_path / "glossary.py"
