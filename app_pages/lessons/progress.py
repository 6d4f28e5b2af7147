"""Lesson progress for this browser session: the steps a learner has finished (seen, and its
question answered) and whether each question was answered right the first time. The lesson
list shows it on every lesson, and a finished lesson ends on a summary of it."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from teaching.format import Lesson

# session state: lesson id -> {"done": {n: title}, "first": {n: bool}, "right": {n: True}}
PROGRESS_KEY = "lesson_progress"
LAST_KEY = "lesson_last"  # session state: (lesson id, step number) of the last step finished


@dataclass(frozen=True)
class Progress:
    steps: int  # steps in the lesson
    done: int  # steps finished
    questions: int  # steps with a question
    answered: int  # questions answered
    right_first: int  # questions answered right the first time

    @property
    def finished(self) -> bool:
        return self.done == self.steps

    @property
    def started(self) -> bool:
        return self.done > 0


def _record(lesson_id: str) -> dict:
    record = st.session_state.setdefault(PROGRESS_KEY, {}).setdefault(
        lesson_id, {"done": {}, "first": {}})
    record.setdefault("right", {})
    return record


def step_done(lesson_id: str, number: int, title: str) -> None:
    """Step `number` (1-based) was shown in full: its figure, after its question if any."""
    _record(lesson_id)["done"][number] = title
    st.session_state[LAST_KEY] = (lesson_id, number)


def left_off() -> tuple[str, int] | None:
    """The lesson and step the learner finished last in this browser session, or None."""
    return st.session_state.get(LAST_KEY)


def first_answer(lesson_id: str, number: int, right: bool) -> None:
    """An answer to a step's question: the first one is kept as it was (later tries do not
    change it), and a right one at any try is noted."""
    record = _record(lesson_id)
    record["first"].setdefault(number, bool(right))
    if right:
        record["right"][number] = True


def answered_right(lesson_id: str, number: int) -> bool:
    """Was the step's question answered right, at the first try or a later one?"""
    return bool(st.session_state.get(PROGRESS_KEY, {}).get(lesson_id, {}).get("right", {})
                .get(number))


def right_first_time(lesson_id: str, number: int) -> bool | None:
    """True/False for an answered question; None when not answered yet."""
    return st.session_state.get(PROGRESS_KEY, {}).get(lesson_id, {}).get("first", {}).get(number)


def done_title(lesson_id: str, number: int) -> str | None:
    """The title a finished step showed (its facts filled in), or None."""
    return st.session_state.get(PROGRESS_KEY, {}).get(lesson_id, {}).get("done", {}).get(number)


def progress(lesson: Lesson) -> Progress:
    record = st.session_state.get(PROGRESS_KEY, {}).get(lesson.id, {"done": {}, "first": {}})
    asked = [n for n, step in enumerate(lesson.steps, 1) if step.question is not None]
    first = record["first"]
    return Progress(len(lesson.steps), sum(1 for n in record["done"] if n <= len(lesson.steps)),
                    len(asked), sum(1 for n in asked if n in first),
                    sum(1 for n in asked if first.get(n)))


def progress_words(p: Progress) -> str:
    """ "3 of 5 steps · 2 of 3 right first time" ("" before the first step is finished)."""
    if not p.started:
        return ""
    words = f"{p.done} of {p.steps} step{'s' * (p.steps != 1)} done"
    if p.questions:
        words += f" · {p.right_first} of {p.questions} right first time"
    return words
