"""Lessons: a list of guided lessons, and one lesson step at a time.

/lessons lists them, with this session's progress on each, under the concept check
(/lessons?check=before&item=<n>, concept_check.py beside this file);
/lessons?lesson=<id>&step=<n> opens step n: its explanation and an optional "predict, then
reveal" question beside the one figure the step is about, in the step's state, with a link to
the full page; step=end is the summary a finished lesson ends on.
"""

from __future__ import annotations

from functools import partial
from urllib.parse import urlencode

import streamlit as st

from teaching.facts import FactError
from teaching.format import Lesson, LessonError
from teaching.render import safe_markdown
from ui import class_answers, class_bar, class_session, projector
from ui.lesson_library import catalogue
from ui.lesson_question import answer_of, ask
from ui.lesson_step import (
    AT_KEY, draw_figure, focused, go_to, keep_settings, lesson_from_url, step_texts, step_view,
)
from ui.page_registry import page_link
from ui.text import md_escape

from .concept_check import check_box, render as render_check
from .course_list import course_list
from .progress import (
    answered_right, done_title, first_answer, progress, right_first_time,
    step_done,
)


def _lesson_list() -> None:
    st.title("Lessons", anchor=False)
    st.markdown("Short guided tours. Each step shows one figure of the app, already set up, "
                "with a few lines on what to look at, and opens the full page when you want "
                "more. Some steps ask you to **guess first**: the answer appears only after you "
                "have made your guess. Your progress is kept until you close or reload this tab.")
    lessons, broken = catalogue()
    check_box()
    course_list(lessons, _start_button, go_to)
    for item in broken:
        st.error(f"The lesson file {md_escape(item.name)} could not be opened: "
                 f"{md_escape(item.problem)}")
    page_link(st, "teach", label="Write your own lesson, or open a lesson file",
              icon=":material/school:")


def _start_button(lesson: Lesson) -> None:
    done = progress(lesson)
    label = "Start again" if done.finished else "Continue" if done.started else "Start"
    st.button(label, key=f"lesson_start_{lesson.id}", type="primary",
              on_click=partial(go_to, lesson.id, _resume_at(lesson)))


def _resume_at(lesson: Lesson) -> int:
    """Where Start/Continue opens a lesson: the first step not finished yet (else step 1)."""
    return next((n for n in range(1, len(lesson.steps) + 1)
                 if done_title(lesson.id, n) is None), 1)


def _navigation(lesson: Lesson, number: int, where: str) -> None:
    n = len(lesson.steps)
    if where == "top":
        st.progress(number / n, text=f"Step {number} of {n}")
    if class_bar.follows_teacher():  # in a live class the teacher moves the steps
        if where == "top":
            class_bar.following_line()
        return
    _buttons(st.columns(2), lesson, number, where)


def _buttons(places, lesson: Lesson, number: int, where: str, width: str = "stretch") -> None:
    """Previous, and Next (Finish on the last step), in two places (columns, or a row)."""
    back, forward = places
    back.button("◀ Previous", key=f"lesson_prev_{where}", disabled=number <= 1,
                on_click=partial(go_to, lesson.id, number - 1), width=width)
    if number < len(lesson.steps):
        forward.button("Next ▶", key=f"lesson_next_{where}", type="primary", width=width,
                       on_click=partial(go_to, lesson.id, number + 1))
    else:
        forward.button("Finish", key=f"lesson_finish_{where}", type="primary",
                       width=width, on_click=_finish, args=(lesson.id,))


def _room_bar(lesson: Lesson, number: int):
    """Projector mode's one line above a step's figure: a place for the step's title (filled
    once its facts are worked out), where it is in the lesson, and Previous and Next. The room
    sees the figure next, and the words under it."""
    # one line on any room screen: a long title wraps inside its place, the buttons keep theirs
    row = st.container(horizontal=True, vertical_alignment="center", wrap=False,
                       key="lesson_room_bar")
    title = row.empty()
    row.caption(f"Step {number} of {len(lesson.steps)}", width="content",
                help=f"Lesson: {md_escape(lesson.title)}")
    if class_bar.follows_teacher():  # in a live class the teacher moves the steps
        class_bar.following_line()
    else:
        _buttons([row, row], lesson, number, "top", width="content")
    return title


def _finish(lesson_id: str) -> None:
    """The lesson's summary: what it covered and the score."""
    st.query_params.from_dict({"lesson": lesson_id, "step": "end"})
    st.session_state.pop(AT_KEY, None)


def _leave() -> None:
    st.query_params.clear()
    st.session_state.pop(AT_KEY, None)


def _server() -> str:
    """The server's own address when the browser told it ("" otherwise: a path)."""
    base = (st.context.url or "").split("?")[0].rstrip("/")
    return base[: -len("/lessons")] if base.endswith("/lessons") else ""


def _step_link(lesson_id: str, number: int) -> str:
    """The address of this step of a lesson the server has."""
    return f"{_server()}/lessons?{urlencode({'lesson': lesson_id, 'step': number})}"


def _class_link(lesson: Lesson, number: int, view) -> None:
    """How to send a class here. An uploaded lesson lives only in this browser, so its link
    is the view's own: the same page, model, text and settings, in any browser. A student in a
    class is sent by the teacher: no such link for them."""
    if class_session.student() is not None:
        return
    if lesson.source == "upload":
        st.caption("This lesson lives only in this browser. To send a class to this view "
                   "(the same page, model, text and settings, without the lesson's words), "
                   "use this link:")
        st.code(view.to_link(_server()), language=None, wrap_lines=True)
        return
    st.caption("Send a class to this step with this link:")
    st.code(_step_link(lesson.id, number), language=None, wrap_lines=True)


def _drifted(step) -> bool:
    """The learner changed the sidebar's text or model away from the step's."""
    state = st.session_state
    return state.get("sb_text") != step.text or state.get("sb_pair", "") != step.pair


def _step(lesson: Lesson, number: int, selection) -> None:
    step = lesson.steps[number - 1]
    room = projector.on()  # the screen a room watches: the figure first, the words under it
    if room:
        title = _room_bar(lesson, number)
    else:
        st.caption(f"Lesson: {md_escape(lesson.title)}")
        _navigation(lesson, number, "top")
    try:
        settings, texts = step_texts(step, with_answer=answer_of(lesson.id, number) is not None)
    except (FactError, LessonError, ValueError) as exc:
        st.error(f"This step cannot be shown with this model and text: {md_escape(str(exc))}")
        _navigation(lesson, number, "bottom")
        return
    view = step_view(step, settings)
    # The teacher of a live class before the reveal: the class's answers, the figure's place
    # and Reveal across the page, first (ui/class_answers.py), the step's words after them.
    waits = step.question is not None and class_answers.teacher_waits(lesson.id, number)
    # The words beside the one figure; a page with no figure of its own runs whole below them.
    # Side by side where both fit, one under the other on a narrow screen (ui/page_style.py).
    if room:
        title.markdown(f"#### {md_escape(texts['title'])}", width="stretch")
        shown, words = st.container(), st.container()
    else:
        words, shown = (st.container(key="wide_lesson_step").columns([5, 6], gap="medium")
                        if focused(step) and not waits else (st.container(), st.container()))
    with words:
        answered = _words(lesson, number, step, settings, texts, titled=not room, waits=waits)
        if answered:  # the rest of the page, in the step's view
            st.link_button("Open the full page ↗", view.to_link(_server()),
                           help="This page with every view and control, in the same model, "
                           "text and settings, in a new tab, to explore freely.")
    with shown:
        if answered:
            keep_settings(lesson.id, number, step, settings)
            with st.container(key="lesson_figure"):
                draw_figure(step, selection)
            step_done(lesson.id, number, texts["title"])
        elif focused(step) and not waits and answer_of(lesson.id, number) is None:
            st.caption("The figure appears here once you have answered.")
    _navigation(lesson, number, "bottom")
    _class_link(lesson, number, view)


def _words(lesson: Lesson, number: int, step, settings: dict, texts: dict,
           titled: bool = True, waits: bool = False) -> bool:
    """The step's title (unless `titled` is False: projector mode has it above the figure),
    explanation and question; True once the figure may be shown. `waits`: the teacher before
    the reveal: the class's answers and Reveal (ui/class_answers.py), the explanation after."""
    if waits:
        answered = ask(lesson.id, number, step, settings, texts)
        st.markdown(safe_markdown(texts["explain"]))
        return answered
    if titled:
        st.header(texts["title"], anchor=False)
    st.markdown(safe_markdown(texts["explain"]))
    if _drifted(step):
        st.info("You changed the text in the sidebar, so the figure shows your text; the "
                "numbers in this step are about the lesson's text.")
        st.button("Put the lesson's text back", key="lesson_restore",
                  on_click=partial(go_to, lesson.id, number))
    if step.question is None:
        return True
    answered = ask(lesson.id, number, step, settings, texts)
    got = answer_of(lesson.id, number)
    if got is not None:
        first_answer(lesson.id, number, got["right"])
    return answered


def _summary(lesson: Lesson) -> None:
    """Where a finished lesson ends: what it covered, step by step, and the score."""
    done = progress(lesson)
    st.caption(f"Lesson: {md_escape(lesson.title)}")
    st.title("Lesson finished" if done.finished else "End of the lesson", anchor=False)
    score = (f" You answered **{done.right_first} of {done.questions}** questions right the "
             "first time." if done.questions else "")
    st.markdown(f"You went through **{done.done} of {done.steps}** steps of “"
                f"{md_escape(lesson.title)}”.{score}")
    lines = []
    for number, step in enumerate(lesson.steps, 1):
        title = done_title(lesson.id, number)
        mark = "✓" if title is not None else "○ not finished:"
        words = md_escape(title if title is not None else step.title)
        first = right_first_time(lesson.id, number)
        said = ("" if step.question is None else " · not answered" if first is None
                else " · right first time" if first
                else " · right after another try" if answered_right(lesson.id, number)
                else " · not answered right")
        lines.append(f"{number}. {mark} {words}{said}")
    st.markdown("**What it covered**\n\n" + "\n".join(lines))
    row = st.container(horizontal=True, gap="medium")
    row.button("All lessons", key="lesson_all", type="primary", on_click=_leave)
    row.button("Start again", key="lesson_again", on_click=partial(go_to, lesson.id, 1))
    lessons, _ = catalogue()
    later = [other for other in lessons.values() if other.id != lesson.id
             and not progress(other).finished]
    if later:
        row.button(f"Next: {md_escape(later[0].title)}", key="lesson_next_lesson",
                   on_click=partial(go_to, later[0].id, 1))


def render(selection) -> None:
    if render_check():  # /lessons?check=before&item=<n>: the concept check
        return
    wanted, number = lesson_from_url()
    if wanted is None:
        _lesson_list()
        return
    lessons, _ = catalogue()
    lesson = lessons.get(wanted)
    if lesson is None:
        st.title("Lessons", anchor=False)
        st.error(f"There is no lesson called “{md_escape(wanted)}” here. An uploaded lesson "
                 "lives only in the browser that opened it.")
        st.button("See all lessons", key="lesson_all", on_click=_leave)
        return
    if st.query_params.get("step") == "end":
        _summary(lesson)
        return
    if number is None or not 1 <= number <= len(lesson.steps):
        st.title(lesson.title, anchor=False)
        st.error(f"This lesson has steps 1 to {len(lesson.steps)}.")
        st.button("Start at step 1", key="lesson_first", on_click=partial(go_to, lesson.id, 1))
        return
    if st.session_state.get("_lesson_problem"):
        st.warning(md_escape(st.session_state["_lesson_problem"]))
    _step(lesson, number, selection)

