"""The lesson list as a course: its units in order, each lesson with its length in steps and
minutes and this session's progress, and "Continue where you left off" at the top. Lessons
outside the course (a teacher's folder, an upload) follow under "More lessons"."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from teaching.format import Lesson
from teaching.render import safe_markdown
from teaching.syllabus import minutes, units
from ui.model_names import short_label
from ui.text import md_escape

from .progress import left_off, progress, progress_words


def _card(lesson: Lesson, start: Callable[[Lesson], None]) -> None:
    with st.container(border=True):
        done = progress(lesson)
        mark = " ✓" if done.finished else ""
        st.markdown(f"#### {md_escape(lesson.title)}{mark}")
        if lesson.summary:
            st.markdown(safe_markdown(lesson.summary))
        models = sorted(lesson.models())
        n = len(lesson.steps)
        st.caption(f"{n} step{'s' * (n != 1)} · about {minutes(lesson)} min · "
                   f"model{'s' * (len(models) > 1)}: "
                   f"{md_escape(', '.join(short_label(m) for m in models))}"
                   + (" · uploaded in this browser" if lesson.source == "upload" else ""))
        if done.started:
            st.markdown(f"{'**Finished**: ' if done.finished else 'So far: '}"
                        f"{progress_words(done)}")
        start(lesson)


def _continue(lessons: dict[str, Lesson], go: Callable[[str, int], None]) -> None:
    """Where the learner left off: the step after the last one finished (or the next lesson
    of the course once that lesson is done)."""
    last = left_off()
    if last is None or last[0] not in lessons:
        return
    lesson = lessons[last[0]]
    number = last[1] + 1
    if number > len(lesson.steps):
        order = [i for unit in units() for i in unit.lessons if i in lessons]
        after = order[order.index(lesson.id) + 1:] if lesson.id in order else []
        if not after:
            return
        lesson, number = lessons[after[0]], 1
    with st.container(border=True):
        st.markdown(f"**Where you left off:** {md_escape(lesson.title)}, step {number} of "
                    f"{len(lesson.steps)}")
        st.button("Continue where I left off", key="lesson_continue", type="primary",
                  on_click=lambda: go(lesson.id, number))


def course_list(lessons: dict[str, Lesson], start: Callable[[Lesson], None],
                go: Callable[[str, int], None]) -> None:
    """Every lesson of `lessons`, grouped by the course's units (units with none of them are
    left out), then the lessons outside the course."""
    _continue(lessons, go)
    course = [lessons[i] for unit in units() for i in unit.lessons if i in lessons]
    if course:
        total = sum(minutes(lesson) for lesson in course)
        st.markdown(f"**The course:** {len(course)} lessons in units that build on each other, "
                    f"about {total // 60} h {total % 60} min in all. Take them in order, or "
                    "start wherever you like.")
    shown = set()
    number = 0
    for unit in units():
        here = [lessons[i] for i in unit.lessons if i in lessons]
        if not here:
            continue
        number += 1
        total = sum(minutes(lesson) for lesson in here)
        st.subheader(f"{number}. {unit.title}", anchor=False)
        st.caption(f"{md_escape(unit.summary)} · {len(here)} "
                   f"lesson{'s' * (len(here) != 1)}, about {total} min")
        for lesson in here:
            _card(lesson, start)
            shown.add(lesson.id)
    others = [lesson for lesson in lessons.values() if lesson.id not in shown]
    if others:
        st.subheader("More lessons", anchor=False)
        for lesson in others:
            _card(lesson, start)
