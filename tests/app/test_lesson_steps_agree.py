"""A lesson step draws the same thing however it is reached: by Next from the step before, by
Previous from the step after, or by its own link in a fresh browser. Compared: the view the
page used (model, text, every setting) and every figure (its title and its numbers). Its
"Open the full page" link opens the page alone in that same view."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import pytest

from page_links import open_lesson, open_view, shown_view
from test_lessons import LESSONS, _answer_wrong_then_right, _texts

from ui.view_state import ViewState


def _drawn(at, step) -> tuple:
    figures = []
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = (spec.get("layout", {}).get("title") or {}).get("text")
        figures.append((chart.key, title, json.dumps(spec.get("data"), sort_keys=True)))
    return shown_view(at, step.page), sorted(figures)


def _answered(at, lesson, number: int):
    """The step's page, after the learner answered its question (if it has one)."""
    step = lesson.steps[number - 1]
    if step.question is not None and not at.session_state["_view_used"].get(step.page):
        settings, texts, _ = _texts(step)
        texts["_settings"] = settings
        at = _answer_wrong_then_right(at, lesson, number, step, texts)
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_next_previous_and_the_link_draw_the_same_step(lesson):
    n = len(lesson.steps)
    at = open_lesson(lesson.id, 1)
    by_next = {}
    for number in range(1, n + 1):
        at = _answered(at, lesson, number)
        by_next[number] = _drawn(at, lesson.steps[number - 1])
        if number < n:
            at.button(key="lesson_next_bottom").click().run()
    by_previous = {n: by_next[n]}
    for number in range(n - 1, 0, -1):
        at.button(key="lesson_prev_bottom").click().run()
        at = _answered(at, lesson, number)
        by_previous[number] = _drawn(at, lesson.steps[number - 1])
    for number in range(1, n + 1):
        linked = _answered(open_lesson(lesson.id, number), lesson, number)
        by_link = _drawn(linked, lesson.steps[number - 1])
        assert by_next[number][0] == by_link[0] == by_previous[number][0], number
        assert by_next[number][1] == by_link[1], (number, "Next and the link differ")
        assert by_previous[number][1] == by_link[1], (number, "Previous and the link differ")
        assert by_link[1] or lesson.steps[number - 1].page not in ("attention", "heads"), number
        # "Open the full page": the page alone, in any browser, in the step's view: every
        # setting the step's figure used, and every one the link carries, as the step has it
        # (the full page also draws controls the figure leaves out, at their defaults)
        button = next(b for b in linked.get("link_button") if "full page" in b.label)
        parts = urlsplit(button.proto.url)
        alone = ViewState.from_link(parts.path.strip("/"), dict(parse_qsl(parts.query)))
        full, step_view = shown_view(open_view(alone), alone.page), by_link[0]
        assert (full.page, full.model, full.text, full.pair) == (
            step_view.page, step_view.model, step_view.text, step_view.pair), number
        for name, value in {**step_view.settings, **alone.settings}.items():
            assert full.settings.get(name) == value, (number, name)
