"""Lessons: a list of guided lessons, and one lesson step at a time.

/lessons lists them; /lessons?lesson=<id>&step=<n> opens step n: its explanation, an optional
"predict, then reveal" question, and the page of the app the step opens, in the step's state.
"""

from __future__ import annotations

from functools import partial
from urllib.parse import urlencode

import streamlit as st

from teaching.facts import FactError
from teaching.format import Lesson, LessonError
from teaching.render import safe_markdown
from ui.lesson_library import catalogue
from ui.lesson_question import answer_of, ask
from ui.lesson_step import (
    AT_KEY, go_to, keep_settings, lesson_from_url, run_page, step_texts, step_view,
)
from ui.model_names import short_label
from ui.page_registry import page_link
from ui.text import md_escape


def _lesson_list() -> None:
    st.title("Lessons", anchor=False)
    st.markdown("Short guided tours. Each step opens a page of the app, already set up, with a "
                "few lines on what to look at. Some steps ask you to **guess first**: the answer "
                "appears only after you have made your guess.")
    lessons, broken = catalogue()
    for lesson in lessons.values():
        with st.container(border=True):
            st.markdown(f"#### {md_escape(lesson.title)}")
            if lesson.summary:
                st.markdown(safe_markdown(lesson.summary))
            models = sorted(lesson.models())
            n = len(lesson.steps)
            st.caption(f"{n} step{'s' * (n != 1)} · model{'s' * (len(models) > 1)}: "
                       f"{md_escape(', '.join(short_label(m) for m in models))}"
                       + (" · uploaded in this browser" if lesson.source == "upload" else ""))
            st.button("Start", key=f"lesson_start_{lesson.id}", type="primary",
                      on_click=partial(go_to, lesson.id, 1))
    for item in broken:
        st.error(f"The lesson file {md_escape(item.name)} could not be opened: "
                 f"{md_escape(item.problem)}")
    page_link(st, "teach", label="Write your own lesson, or open a lesson file",
              icon=":material/school:")


def _navigation(lesson: Lesson, number: int, where: str) -> None:
    n = len(lesson.steps)
    if where == "top":
        st.progress(number / n, text=f"Step {number} of {n}")
    back, forward = st.columns(2)
    back.button("◀ Previous", key=f"lesson_prev_{where}", disabled=number <= 1,
                on_click=partial(go_to, lesson.id, number - 1), width="stretch")
    if number < n:
        forward.button("Next ▶", key=f"lesson_next_{where}", type="primary", width="stretch",
                       on_click=partial(go_to, lesson.id, number + 1))
    else:
        forward.button("Finish", key=f"lesson_finish_{where}", width="stretch",
                       on_click=_leave)


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
    is the view's own: the same page, model, text and settings, in any browser."""
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


def _step(lesson: Lesson, number: int) -> None:
    step = lesson.steps[number - 1]
    st.caption(f"Lesson: {md_escape(lesson.title)}")
    _navigation(lesson, number, "top")
    try:
        settings, texts = step_texts(step, with_answer=answer_of(lesson.id, number) is not None)
    except (FactError, LessonError, ValueError) as exc:
        st.error(f"This step cannot be shown with this model and text: {md_escape(str(exc))}")
        _navigation(lesson, number, "bottom")
        return
    st.header(texts["title"], anchor=False)
    st.markdown(safe_markdown(texts["explain"]))
    if _drifted(step):
        st.info("You changed the text in the sidebar, so the page below shows your text; the "
                "numbers in this step are about the lesson's text.")
        st.button("Put the lesson's text back", key="lesson_restore",
                  on_click=partial(go_to, lesson.id, number))
    answered = step.question is None or ask(lesson.id, number, step, settings, texts)
    if answered:
        st.link_button("Open this view on its own ↗",
                       step_view(step, settings).to_link(_server()),
                       help="The same page with the same model, text and settings, in a new "
                       "tab, to explore freely.")
        st.divider()
        keep_settings(lesson.id, number, step, settings)
        run_page(step.page)
    _navigation(lesson, number, "bottom")
    _class_link(lesson, number, step_view(step, settings))


def render() -> None:
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
    if number is None or not 1 <= number <= len(lesson.steps):
        st.title(lesson.title, anchor=False)
        st.error(f"This lesson has steps 1 to {len(lesson.steps)}.")
        st.button("Start at step 1", key="lesson_first", on_click=partial(go_to, lesson.id, 1))
        return
    if st.session_state.get("_lesson_problem"):
        st.warning(md_escape(st.session_state["_lesson_problem"]))
    _step(lesson, number)

