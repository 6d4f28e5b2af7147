"""A lesson step names the one figure it shows (`figure = "..."`), or gets its page's own; a
file without the key still parses (every lesson written before it); a figure its page does not
offer is refused with its line; `figure = "page"` asks for the whole page on any page; every
page that offers figures can draw them."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from teaching.figures import FIGURES, default_figure, figure_of
from teaching.format import LessonError, parse_lesson
from teaching.pages import BY_PATH, PAGES

pytestmark = pytest.mark.unit

TEACHING = Path(__file__).resolve().parents[2] / "teaching"
LESSON = '''title = "Figures"
model = "tiny-reverse"
text = "stone"

[[steps]]
title = "One"
page = "attention"
{figure}
explain = "Look."
'''


def _parse(figure_line: str, page: str = "attention"):
    return parse_lesson(LESSON.format(figure=figure_line).replace('"attention"', f'"{page}"'),
                        "figures")


def test_a_step_may_name_its_figure_and_otherwise_gets_its_pages_own():
    step = _parse('figure = "cross-attention"').steps[0]
    assert step.figure == "cross-attention" == figure_of(step.page, step.figure)
    plain = _parse("").steps[0]
    assert plain.figure == "" and figure_of("attention", plain.figure) == "heatmap"


def test_a_step_may_ask_for_the_whole_page_on_any_page():
    for page in ("attention", "embeddings"):
        step = _parse('figure = "page"', page).steps[0]
        assert step.figure == "page" and figure_of(step.page, step.figure) == ""


@pytest.fixture
def no_figure_page(monkeypatch) -> str:
    """A lesson page with no figure: one that still has none, else (every page has one now)
    the last page with figures, its entry taken away for the test."""
    page = next((p for p in PAGES if p not in FIGURES), None)
    if page is None:
        page = list(FIGURES)[-1]
        monkeypatch.delitem(FIGURES, page)
    return page


@pytest.mark.parametrize("line, page, words", [
    ('figure = "everything"', "attention", "figure must be one of: 'heatmap', 'cross-attention'"),
    ('figure = 3', "attention", "figure must be one of"),
    ('figure = "heatmap"', None, "page has no figure to choose"),
])
def test_a_figure_the_page_does_not_offer_is_refused_with_its_line(line, page, words,
                                                                   no_figure_page):
    page = page or no_figure_page
    with pytest.raises(LessonError) as caught:
        _parse(line, page)
    assert words in str(caught.value) and f"the {page} page" in str(caught.value)
    assert caught.value.line == LESSON[:LESSON.index("{figure}")].count("\n") + 1


def test_files_written_before_the_figure_key_still_parse():
    for path in [TEACHING / "example_lesson.toml", *sorted((TEACHING / "bundled").glob("*.toml"))]:
        lesson = parse_lesson(path.read_bytes(), path.stem)
        for step in lesson.steps:  # every bundled step shows one figure, not a whole page
            assert figure_of(step.page, step.figure) in FIGURES[step.page], (path.name, step.title)


def test_every_page_with_figures_is_a_lesson_page_whose_module_draws_them():
    for page, figures in FIGURES.items():
        assert page in PAGES and figures and default_figure(page) == next(iter(figures))
        module = importlib.import_module(f"app_pages.{BY_PATH[page].module}")
        assert callable(getattr(module, "figure", None)), page


def test_a_page_with_no_figure_gives_a_step_none(no_figure_page):
    assert default_figure(no_figure_page) == "" == figure_of(no_figure_page)
    assert figure_of("effect") == "strip"  # a page that has figures: its first
