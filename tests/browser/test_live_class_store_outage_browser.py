"""A student in Chromium through a Redis restart (SHUTDOWN SAVE, then Redis started again on the
same port), beside the teacher: while Redis is away the student's bar says "Lost touch with the
class — trying again" and the class does not end; the teacher moves to the next step meanwhile,
and once Redis is back the student's screen takes that step by itself. Screenshots of the
student at 1400×900 and 800×900, during the outage and after, go to $LIVE_CLASS_SHOTS when it
is set."""

from __future__ import annotations

import os
import time

import pytest

from tests.browser.app_server import running_app
from tests.browser.test_live_class_browser import (  # noqa: F401 - browser: a fixture
    LOOSE_SECONDS, _idle, _join, _nav, _shot, _start_class, browser,
)
from tests.redis_server import restartable_redis

pytestmark = pytest.mark.browser

WIDE, NARROW = {"width": 1400, "height": 900}, {"width": 800, "height": 900}
LOST = "Lost touch with the class — trying again"


@pytest.fixture(scope="module")
def redis_app(tmp_path_factory):
    """The app on a Redis class store that the test can restart: (url, redis)."""
    folder = tmp_path_factory.mktemp("live-class-redis")
    before = os.environ.get("ATTENTION_LAB_CLASS_STORE")
    with restartable_redis() as server:
        os.environ["ATTENTION_LAB_CLASS_STORE"] = server.url
        try:
            with running_app(folder / "server.log") as url:
                yield url, server
        finally:
            if before is None:
                os.environ.pop("ATTENTION_LAB_CLASS_STORE", None)
            else:
                os.environ["ATTENTION_LAB_CLASS_STORE"] = before


def _both(student, name: str) -> None:
    """The student's screen at 1400 and at 800 pixels wide."""
    _shot(student, f"{name}-1400px")
    student.set_viewport_size(NARROW)
    student.wait_for_timeout(800)
    _shot(student, f"{name}-800px")
    student.set_viewport_size(WIDE)


def test_a_student_follows_again_by_itself_after_a_redis_restart(redis_app, browser):
    url, redis = redis_app
    teacher = browser.new_context(viewport=WIDE).new_page()
    student = browser.new_context(viewport=WIDE).new_page()
    _join(student, url, _start_class(teacher, url))
    _nav(teacher, "Lessons")
    teacher.get_by_role("button", name="Start").first.click()
    student.get_by_text("Step 1 of").wait_for(timeout=120_000)
    _idle(student)

    redis.shut_down()
    student.get_by_text(LOST).wait_for(timeout=30_000)
    assert student.get_by_text("The class has ended").count() == 0
    teacher.get_by_role("button", name="Next ▶").first.click()  # the class cannot be told yet
    teacher.get_by_text("Step 2 of").wait_for(timeout=120_000)
    teacher.get_by_text(LOST).wait_for(timeout=30_000)
    _both(student, "student-redis-away")
    assert student.get_by_text("Step 1 of").count() == 1  # where the class was

    redis.start()
    back = time.monotonic()
    student.get_by_text("Step 2 of").wait_for(timeout=60_000)
    followed = time.monotonic() - back
    print(f"the student was on the teacher's step {followed:.1f} s after Redis was back")
    assert followed < LOOSE_SECONDS  # by itself, no reload
    _idle(student)
    student.get_by_text("Following the teacher").wait_for(timeout=10_000)
    assert student.get_by_text(LOST).count() == 0
    assert student.get_by_text("The class has ended").count() == 0
    teacher.get_by_text("1 following · 0 looking around · 1 joined").wait_for(timeout=10_000)
    _both(student, "student-redis-back")
