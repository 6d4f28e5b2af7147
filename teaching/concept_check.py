"""The concept check: two parallel forms, one taken before the course and one after
(teaching/course/checks/before.toml and after.toml, in the lesson format, so the same question
machinery asks them and every right answer is a fact computed from the model). Item i of both
forms probes the same misconception with the same kind of question, on another text (or
model); every misconception of the course is probed. A learner's map says, for each
misconception, whether their answers held, and links the first step of the course that
teaches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .format import Lesson, LessonError, parse_lesson
from .render import placeholders
from .syllabus import COURSE, misconceptions, units

CHECKS = COURSE / "checks"
FORMS = ("before", "after")
MIN_ITEMS = 12
SAID = {"before": "the first check", "after": "the second check"}  # in messages


class CheckError(ValueError):
    """A check's file does not load, or the two forms do not pair up."""


def read_form(form: str, folder: Path | None = None) -> Lesson:
    """One form, parsed like a lesson (CheckError naming the line and problem); `folder`:
    the check's own (CHECKS) unless given."""
    try:
        data = ((folder or CHECKS) / f"{form}.toml").read_bytes()
    except OSError as exc:
        raise CheckError(f"{SAID[form]} cannot be read ({exc.strerror})") from None
    try:
        return parse_lesson(data, f"check-{form}", "check")
    except LessonError as exc:
        raise CheckError(f"{SAID[form]}: {exc}") from None


def pair_problems(before: Lesson, after: Lesson) -> list[str]:
    """Why the two forms are not parallel forms of the check ([] when they are)."""
    problems = []
    for form, lesson in zip(FORMS, (before, after)):
        if len(lesson.steps) < MIN_ITEMS:
            problems.append(f"{SAID[form]} has {len(lesson.steps)} questions; it needs at "
                            f"least {MIN_ITEMS}")
        for number, step in enumerate(lesson.steps, 1):
            if step.question is None or not step.question.misconception:
                problems.append(f"{SAID[form]}, question {number} (line {step.line}) needs a "
                                "question that names the misconception it probes")
        probed = {s.question.misconception for s in lesson.steps if s.question is not None}
        missing = sorted(set(misconceptions()) - probed)
        if missing:
            problems.append(f"{SAID[form]} probes no question on: {', '.join(missing)}")
    if len(before.steps) != len(after.steps):
        problems.append(f"the first check has {len(before.steps)} questions and the second "
                        f"{len(after.steps)}; they must have as many")
    for number, (b, a) in enumerate(zip(before.steps, after.steps), 1):
        if b.question is None or a.question is None:
            continue
        if (b.question.misconception, b.question.kind) != (a.question.misconception,
                                                           a.question.kind):
            problems.append(f"question {number} must probe the same misconception with the "
                            f"same kind of question in both checks (line {a.line})")
    shared = {s.text for s in before.steps} & {s.text for s in after.steps}
    if shared:
        problems.append(f"the two checks share a text: “{sorted(shared)[0]}”")
    return problems


def load_forms(folder: Path | None = None) -> dict[str, Lesson]:
    """Both forms, checked to pair up (CheckError with the first problem)."""
    forms = {form: read_form(form, folder) for form in FORMS}
    problems = pair_problems(forms["before"], forms["after"])
    if problems:
        raise CheckError(problems[0])
    return forms


def answer_facts(lesson: Lesson) -> list[set[str]]:
    """For each item, the facts its right answer is computed from."""
    return [placeholders(s.question.answer) if s.question else set() for s in lesson.steps]


@dataclass(frozen=True)
class Row:
    """One misconception on a learner's map."""

    misconception: str
    belief: str
    before: bool | None  # right on every item of the first check (None: not taken)
    after: bool | None
    step: tuple[str, int] | None  # the first course step whose question probes it

    @property
    def held(self) -> bool | None:
        """The latest check's verdict: True held, False revisit, None not taken yet."""
        return self.after if self.after is not None else self.before


def teaching_steps(lessons: dict[str, Lesson]) -> dict[str, tuple[str, int]]:
    """For each misconception, the first step of the course (units in order) whose question
    probes it: (lesson id, step number)."""
    found: dict[str, tuple[str, int]] = {}
    for unit in units():
        for lesson_id in unit.lessons:
            lesson = lessons.get(lesson_id)
            for number, step in enumerate(lesson.steps if lesson else (), 1):
                tag = step.question.misconception if step.question is not None else ""
                if tag:
                    found.setdefault(tag, (lesson_id, number))
    return found


def _verdict(form: Lesson, answers: dict[int, bool], tag: str) -> bool | None:
    numbers = [n for n, s in enumerate(form.steps, 1)
               if s.question is not None and s.question.misconception == tag]
    if not numbers or any(answers.get(n) is None for n in numbers):
        return None
    return all(answers[n] for n in numbers)


def learner_map(forms: dict[str, Lesson], answers: dict[str, dict[int, bool]],
                lessons: dict[str, Lesson]) -> list[Row]:
    """Every misconception of the course, in the course's order, with the learner's verdicts
    (`answers`: form -> item number -> right)."""
    steps = teaching_steps(lessons)
    return [Row(tag, m.belief, _verdict(forms["before"], answers.get("before", {}), tag),
                _verdict(forms["after"], answers.get("after", {}), tag), steps.get(tag))
            for tag, m in misconceptions().items()]
