"""The screen a room watches shows the figure: in projector mode, at the two screens a class
projector has (1024 × 768, 1280 × 720), at least half of the main figure is inside the first
screen, unscrolled, on /attention and on every step of every bundled lesson at 1024 × 768 (and
one step of each layout at 1280 × 720), its question answered first, when it has one, as a
teacher would before the room sees the figure. On /attention the controls are one click away,
beside the title.

The main figure is what tests/browser/test_lesson_figures_above_the_fold.py calls a step's
figure (a plot, a table of numbers, or a training step's Start button): the first one in the
step's figure box; on /attention, the first heatmap. "Inside" is the share of its area within
the window, measured with the page scrolled to the top.
"""

from __future__ import annotations

import urllib.parse

import pytest

from teaching.figures import figure_of
from test_browser import _settle, browser  # noqa: F401  (fixtures)
from test_lesson_figures_above_the_fold import (  # noqa: F401  (server: a fixture)
    BUNDLED_STEPS, DRAWN, QUESTION, server, open_step,
)

pytestmark = pytest.mark.browser

ROOM_SCREENS = [(1024, 768), (1280, 720)]
SHORT = "The cat sat on the mat because it was warm."
HALF = 0.5

# The share of an element's area inside the window, with every scrolling box at its top.
SHARE_IN_SIGHT = r"""selector => {
  window.scrollTo(0, 0);
  for (const box of document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]'))
    box.scrollTop = 0;
  const el = document.querySelector(selector);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  const w = Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0));
  const h = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
  return {share: r.width * r.height ? (w * h) / (r.width * r.height) : 0,
          top: Math.round(r.top), height: Math.round(r.height)};
}"""
HEATMAP = '[data-testid="stMain"] .js-plotly-plot'


def _in_sight(page, selector: str) -> dict | None:
    page.wait_for_timeout(300)  # the scroll applied
    return page.evaluate(SHARE_IN_SIGHT, selector)


@pytest.mark.parametrize("screen", ROOM_SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("model", ["minilm", "tiny-chars", "tiny-reverse"])
def test_the_attention_map_is_in_the_first_screen(server, browser, screen, model):  # noqa: F811
    page = browser.new_page(viewport={"width": screen[0], "height": screen[1]})
    query = urllib.parse.urlencode({"model": model, "text": SHORT, "projector": "1"})
    page.goto(f"{server}/attention?{query}", wait_until="domcontentloaded")
    page.locator(f"{HEATMAP} .nsewdrag").first.wait_for(timeout=240_000)
    _settle(page)
    seen = _in_sight(page, HEATMAP)
    page.screenshot(path=f"/tmp/projector_attention_{model}_{screen[0]}x{screen[1]}.png")
    # the controls fold away beside the title, one click from the map
    page.get_by_role("button", name="Layer, head and view").click()
    page.get_by_text("Layer", exact=True).first.wait_for(timeout=30_000)
    page.close()
    assert seen is not None and seen["share"] >= HALF, (model, screen, seen)


def _short_in_sight(page, server: str, steps, screen, shots: str = "") -> list:
    """Open each (lesson, step number) from its link in projector mode: the steps whose main
    figure is less than half inside the first screen (each one's screen saved in /tmp).
    `shots`: a file name start under which every step's screen is saved."""
    short = []
    page.goto(f"{server}/lessons?lesson={steps[0][0].id}&step={steps[0][1]}",
              wait_until="domcontentloaded")
    page.locator(f"{DRAWN}, {QUESTION}").first.wait_for(timeout=300_000)  # a new server's
    for lesson, number in steps:  # first run loads a model
        open_step(page, server, lesson, number, "&projector=1")
        page.evaluate("s => document.querySelector(s).setAttribute('data-main', '1')",
                      DRAWN)
        seen = _in_sight(page, "[data-main]")
        if seen is None or seen["share"] < HALF:
            short.append((lesson.id, number, seen))
            page.screenshot(path=f"/tmp/projector_{lesson.id}_{number}_{screen[0]}.png")
        elif shots:
            page.screenshot(path=f"{shots}_{lesson.id}_{number}.png")
    return short


def one_of_each_kind(steps) -> list:
    """The first step of each layout a screen can get: its page, its figure, its question's
    kind (the same three lay a step out the same way whatever its lesson)."""
    first = {}
    for lesson, number in steps:
        step = lesson.steps[number - 1]
        kind = (step.page, figure_of(step.page, step.figure),
                step.question.kind if step.question else "")
        first.setdefault(kind, (lesson, number))
    return list(first.values())


# Every step on the classroom projector's usual screen; one step of each layout on the wider,
# shorter one (every step there too would double the suite's longest browser test).
@pytest.mark.parametrize("screen, steps", [(ROOM_SCREENS[0], BUNDLED_STEPS),
                                           (ROOM_SCREENS[1], one_of_each_kind(BUNDLED_STEPS))],
                         ids=lambda v: f"{v[0]}x{v[1]}" if isinstance(v[0], int) else "steps")
def test_every_lesson_step_shows_its_figure_in_the_first_screen(server, browser,  # noqa: F811
                                                                screen, steps, tmp_path):
    page = browser.new_page(viewport={"width": screen[0], "height": screen[1]})
    short = _short_in_sight(page, server, steps, screen, str(tmp_path / f"{screen[0]}"))
    page.close()
    assert short == [], f"steps whose figure is less than half in the first screen: {short}"
