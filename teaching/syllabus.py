"""The course: the ideas it teaches, the misconceptions it is built against, and its units
(teaching/course/*.toml). A lesson step names the ideas it teaches (`teaches`) and a question
the misconception it probes (`misconception`); teaching/format.py checks both names here.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

COURSE = Path(__file__).resolve().parent / "course"


@dataclass(frozen=True)
class Idea:
    id: str
    idea: str  # one plain sentence
    note: str  # the note it comes from


@dataclass(frozen=True)
class Misconception:
    id: str
    belief: str  # the wrong belief, in plain words
    why: str  # why it is wrong


@dataclass(frozen=True)
class Unit:
    title: str
    summary: str
    lessons: tuple[str, ...]  # lesson ids, in the order a learner takes them


def _read(name: str) -> dict:
    return tomllib.loads((COURSE / name).read_text(encoding="utf-8"))


@functools.cache
def ideas() -> dict[str, Idea]:
    return {i["id"]: Idea(i["id"], i["idea"], i["note"]) for i in _read("ideas.toml")["ideas"]}


@functools.cache
def misconceptions() -> dict[str, Misconception]:
    return {m["id"]: Misconception(m["id"], m["belief"], m["why"])
            for m in _read("misconceptions.toml")["misconceptions"]}


@functools.cache
def units() -> tuple[Unit, ...]:
    return tuple(Unit(u["title"], u.get("summary", ""), tuple(u["lessons"]))
                 for u in _read("units.toml")["units"])


STEP_MINUTES = 1  # reading a step and looking at its figure
QUESTION_MINUTES = 1  # guessing, then reading the answer
TRAINING_MINUTES = 3  # a training step's run


def minutes(lesson) -> int:
    """About how long a lesson takes: a minute a step, one more for each question, and a few
    for each step that trains a model."""
    steps = lesson.steps
    return (STEP_MINUTES * len(steps) + QUESTION_MINUTES * sum(s.question is not None
                                                                for s in steps)
            + TRAINING_MINUTES * sum(s.page == "training" for s in steps))


def unit_of(lesson_id: str) -> int | None:
    """The index of the unit a lesson belongs to (None: not part of the course)."""
    return next((i for i, u in enumerate(units()) if lesson_id in u.lessons), None)
