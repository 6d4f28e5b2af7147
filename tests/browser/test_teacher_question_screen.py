"""The teacher's screen on a live question step, as the room sees it (projector mode, 1024 x 768
and 1280 x 720): the class's answers, the place where the figure will be and "Reveal to
everyone" all inside the first screen, unscrolled, and nothing meant for a student (the
learner's options, "Check my answer", "once you have answered"). Screenshots go to
$ROOM_SHOTS when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.test_live_class_browser import _idle, _open, server  # noqa: F401 - fixture
from tests.browser.test_narrow import browser  # noqa: F401 - fixture

pytestmark = pytest.mark.browser

LESSON, STEP = "reading-heatmaps", 3  # a multiple-choice question on the attention page
CELL_STEP = 2  # "click the brightest cell"
SCREENS = {"1024x768": {"width": 1024, "height": 768}, "1280x720": {"width": 1280, "height": 720}}
FOR_STUDENTS = ("Check my answer", "once you have answered", "Pick one answer first",
                "Make your guess first", "Or choose the key token")


def _box(page, locator) -> dict:
    locator.first.wait_for(timeout=120_000)
    return locator.first.bounding_box()


def _start_and_open_step(page, server: str, step: int) -> None:
    """Start a class in projector mode, then open a question step (a new page load: the
    teacher's tab comes back leading, as a reload does)."""
    _open(page, f"{server}/teach?projector=1")
    page.get_by_role("button", name="Start a class").click()
    page.get_by_text("Scan to join").wait_for(timeout=60_000)
    _idle(page)
    _open(page, f"{server}/lessons?lesson={LESSON}&step={step}&projector=1")
    page.get_by_role("button", name="Reveal to everyone").wait_for(timeout=180_000)
    _idle(page)
    page.wait_for_timeout(1500)  # the live count's first redraw


def _answers(page, choices: list[str]) -> None:
    """Students join the class shown in the teacher's bar and answer (through the store)."""
    import re

    from teaching.class_store import open_store

    code = re.search(r"Class ([A-Z0-9]{3}-[A-Z0-9]{3})", page.locator(
        '[data-testid="stMain"]').inner_text()).group(1)
    store = open_store(os.environ["ATTENTION_LAB_CLASS_STORE"])
    for n, choice in enumerate(choices):
        member = store.join(code, f"S{n}", client=f"10.0.0.{n}")
        assert store.answer(member.class_id, member.member_key, f"{LESSON}:{STEP}", choice)


def _shot(page, name: str) -> None:
    folder = os.environ.get("ROOM_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.mouse.move(2, 2)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)


@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("step", [STEP, CELL_STEP])
def test_the_teacher_sees_answers_figure_place_and_reveal_in_the_first_screen(
        server, browser, screen, step):  # noqa: F811
    size = SCREENS[screen]
    page = browser.new_context(viewport=size).new_page()
    _start_and_open_step(page, server, step)
    if step == STEP:  # three students answer: the teacher's count shows them, live
        _answers(page, ["exactly one", "exactly one", "it depends on the sentence"])
        page.get_by_text("3 answered").first.wait_for(timeout=30_000)
    _shot(page, f"teacher-question-step{step}-{screen}")
    reveal = _box(page, page.get_by_role("button", name="Reveal to everyone"))
    answers = _box(page, page.locator('[data-testid="stPlotlyChart"]'))
    place = _box(page, page.get_by_text("The figure appears when you reveal the answer"))
    assert reveal["y"] >= 0 and reveal["y"] + reveal["height"] <= size["height"], reveal
    assert answers["y"] + answers["height"] / 2 <= size["height"], answers  # half of it, at least
    assert place["y"] + place["height"] <= size["height"], place
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert [said for said in FOR_STUDENTS if said in main] == []
    assert page.locator('[data-testid="stMain"] [role="radiogroup"]').count() == 0
    assert page.locator('[data-testid="stMain"] img').count() == 0  # no second QR code
    page.context.close()
