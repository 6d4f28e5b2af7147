"""The concept check on the lessons page, for a learner alone (teaching/concept_check.py).

/lessons?check=before&item=3 asks question 3 of the first check; item=end shows the learner's
map. Each question is answered once, and no answer is shown until the end of the form, so the
first check does not teach the second. Answers are kept for the browser session, like lesson
progress; right or not is worked out from the model once the learner has answered.
"""

from __future__ import annotations

from functools import partial
from urllib.parse import urlencode

import streamlit as st

from teaching.concept_check import FORMS, CheckError, Row, learner_map, load_forms
from teaching.facts import FactError
from teaching.format import Lesson, LessonError
from teaching.render import safe_markdown

from ui.cache import shared
from ui.lesson_library import catalogue
from ui.lesson_step import shown_name, step_texts
from ui.text import md_escape
from ui.view_state import url_int

from .class_check import leads_a_class, send as send_to_class, start_buttons, teacher_screen
from .progress import progress

CHECK_KEY = "concept_check"  # session state: form -> {item number: {"picked", "right"}}
TITLES = {"before": "Check what you know first", "after": "Check again"}
MARKS = {True: "✓ right", False: "✗ not right", None: "not taken yet"}


def _texts(form: str, number: int, with_answer: bool, step) -> dict[str, str]:
    """An item's texts with its facts filled in (and its answer, when asked), worked out once
    on this server: every learner's item is the same, and a fact may take seconds."""
    return _shared_texts(form, number, with_answer, step.model, step.text, step.question, step)


@shared("check-texts")
def _shared_texts(form: str, number: int, with_answer: bool, model: str, text: str, question,
                  _step) -> dict[str, str]:
    return step_texts(_step, with_answer=with_answer)[1]


def _right_answer(forms: dict[str, Lesson], form: str, number: int) -> str:
    return _texts(form, number, True, forms[form].steps[number - 1])["answer"]


def _answers(form: str) -> dict[int, dict]:
    return st.session_state.setdefault(CHECK_KEY, {}).setdefault(form, {})


def rights(form: str) -> dict[int, bool]:
    """Item number -> right, for the items answered and worked out."""
    return {n: got["right"] for n, got in _answers(form).items() if got.get("right") is not None}


def _finished(form: str, lesson: Lesson) -> bool:
    return len(_answers(form)) >= len(lesson.steps)


def go(form: str, item: int | str) -> None:
    st.query_params.from_dict({"check": form, "item": str(item)})


def _leave() -> None:
    st.query_params.clear()


def _next_open(form: str, lesson: Lesson) -> int | str:
    """The first question not answered yet, or "end"."""
    given = _answers(form)
    return next((n for n in range(1, len(lesson.steps) + 1) if n not in given), "end")


def check_box() -> None:
    """The lesson list's first box: take the first check, then (after lessons) check again,
    and see the map."""
    try:
        forms = load_forms()
    except CheckError as exc:
        st.error(f"The concept check cannot be opened: {md_escape(str(exc))}")
        return
    before, after = forms["before"], forms["after"]
    done_before, done_after = _finished("before", before), _finished("after", after)
    lessons, _ = catalogue()
    finished = sum(progress(lesson).finished for lesson in lessons.values())
    n = len(before.steps)
    with st.container(border=True, key="concept_check_box"):
        if leads_a_class():  # a teacher gives the class a check, not themselves
            st.markdown(f"**The concept check, for your class.** {n} quick questions about "
                        "real runs of the models, before the course and again after it. "
                        "Your screen shows what the class got right, without names.")
            start_buttons(st.container(horizontal=True, gap="small"), go)
            return
        if not done_before:
            st.markdown(f"**Check what you know first.** {n} quick questions about real runs "
                        "of the models, a few minutes in all. Answer each once; you see how "
                        "you did at the end, with the lessons that help where you need them.")
        elif not done_after:
            st.markdown("**Check again** once you have done some lessons: the same ideas, on "
                        "other sentences. Your map shows what moved.")
        else:
            st.markdown("**You have taken both checks.** Your map shows what moved.")
        row = st.container(horizontal=True, gap="small")
        if not done_before:
            row.button("Continue the first check" if _answers("before") else TITLES["before"],
                       key="check_start_before", type="primary",
                       on_click=partial(go, "before", _next_open("before", before)))
        if not done_after and (done_before or finished):
            row.button("Continue the second check" if _answers("after") else TITLES["after"],
                       key="check_start_after",
                       type="primary" if done_before and finished else "secondary",
                       disabled=not finished,
                       help=None if finished else "Finish a lesson first.",
                       on_click=partial(go, "after", _next_open("after", after)))
        if _answers("before") or _answers("after"):  # the map so far, once anything is answered
            form = "after" if _answers("after") else "before"
            row.button("Your map", key="check_map", on_click=partial(go, form, "end"))


def _record(form: str, number: int, box: str) -> None:
    """The learner's answer, once: a second answer to the same question is not kept."""
    picked = st.session_state.get(box)
    if picked is not None:
        _answers(form).setdefault(number, {"picked": picked, "right": None})
        send_to_class(form, number, picked)  # in a live class, the class's count too
        st.query_params.from_dict({"check": form, "item": str(number + 1)})


def _settle(form: str, lesson: Lesson) -> None:
    """Work out right or not for every answer given and not yet checked (the answer's facts
    are computed only now, after the learner has answered)."""
    for number, got in _answers(form).items():
        if got["right"] is None and 1 <= number <= len(lesson.steps):
            step = lesson.steps[number - 1]
            with st.spinner("Noting your answer…"):
                got["right"] = got["picked"] == _texts(form, number, True, step)["answer"]


def _item(form: str, lesson: Lesson, number: int) -> None:
    step = lesson.steps[number - 1]
    n = len(lesson.steps)
    st.caption(f"{md_escape(TITLES[form])} · question {number} of {n}")
    st.progress((number - 1) / n)
    if number in _answers(form):
        st.info("You have answered this question. Each question is answered once.")
        st.button("Next ▶", key="check_next", type="primary",
                  on_click=partial(go, form, _next_open(form, lesson)))
        return
    try:
        with st.spinner("This question is about a training run of the copying model. It "
                        "runs once on this server, in about a minute…"
                        if step.page == "training" else "Reading the question's run…"):
            texts = _texts(form, number, False, step)
    except (FactError, LessonError, ValueError) as exc:
        st.error(f"This question cannot be asked with this model: {md_escape(str(exc))}")
        return
    st.subheader(texts["title"], anchor=False)
    # the item's text, unless the question quotes it (a training run reads no text of its own)
    if step.page != "training" and f"“{step.text}”" not in texts["prompt"]:
        st.markdown(f"{md_escape(shown_name(step.model))} reads: “{md_escape(step.text)}”")
    st.markdown(safe_markdown(texts["prompt"]))
    options = [texts[f"option{i}"] for i in range(len(step.question.options))]
    box = f"check_{form}_{number}"
    st.radio("Your answer", options, index=None, key=box, label_visibility="collapsed")
    nothing = st.session_state.get(box) is None
    st.button("Answer" if number < n else "Answer and see my map", key="check_answer",
              type="primary", disabled=nothing, on_click=partial(_record, form, number, box))
    st.caption("You answer each question once. How you did comes at the end.")
    st.button("Leave the check", key="check_leave", on_click=_leave,
              help="Your answers so far are kept; you can come back to the next question.")


def kindly(row: Row) -> str:
    """The misconception in the learner's terms: what their answers suggest they thought."""
    belief = safe_markdown(row.belief[0].lower() + row.belief[1:])
    if row.held is None:
        return f"Not asked yet: whether {belief}"
    if row.held:
        return f"You did not think that {belief}"
    return f"Your answer suggests you thought that {belief}"


def _map_line(row: Row, lessons: dict[str, Lesson]) -> str:
    verdict = {True: "**Held**", False: "**Revisit**", None: "**Not taken yet**"}[row.held]
    line = (f"{verdict} · {kindly(row)}  \nBefore: {MARKS[row.before]} · "
            f"after: {MARKS[row.after]}")
    if row.held is False and row.step is not None and row.step[0] in lessons:
        lesson_id, number = row.step
        link = urlencode({"lesson": lesson_id, "step": number})
        line += (f" · see why: [{md_escape(lessons[lesson_id].title)}, step {number}]"
                 f"(/lessons?{link})")
    return line


def show_map(forms: dict[str, Lesson], form: str) -> None:
    """The learner's map at the end of a form: every misconception, held or to revisit."""
    lessons, _ = catalogue()
    rows = learner_map(forms, {f: rights(f) for f in FORMS}, lessons)
    held = sum(r.held is True for r in rows)
    revisit = [r for r in rows if r.held is False]
    st.caption(TITLES[form])
    st.title("Your map", anchor=False)
    first = form == "before" and not _answers("after")
    st.markdown(f"Of the course's {len(rows)} common mix-ups, your answers held on **{held}**"
                f" and suggest revisiting **{len(revisit)}**."
                + (" Take the lessons, then check again: the same ideas on other sentences."
                   if first else ""))
    for group, title in ((revisit, "To revisit"), ([r for r in rows if r.held], "Held"),
                         ([r for r in rows if r.held is None], "Not asked yet")):
        if group:
            st.subheader(title, anchor=False)
            if group is revisit:
                st.caption("Many people think so at first. Each link opens the lesson step "
                           "that shows, on a real run, why it is not so.")
            st.markdown("\n\n".join(f"- {_map_line(r, lessons)}" for r in group))
    st.button("All lessons", key="check_all", type="primary", on_click=_leave)


def render() -> bool:
    """Draw the check the address asks for; False when the address asks for none."""
    form = st.query_params.get("check")
    if form is None:
        return False
    try:
        forms = load_forms()
    except CheckError as exc:
        st.title("Concept check", anchor=False)
        st.error(f"The concept check cannot be opened: {md_escape(str(exc))}")
        st.button("All lessons", key="check_all", on_click=_leave)
        return True
    if form not in FORMS:
        st.title("Concept check", anchor=False)
        st.error("There is no such check here: there is one before the course and one after.")
        st.button("All lessons", key="check_all", on_click=_leave)
        return True
    lesson = forms[form]
    if leads_a_class():
        teacher_screen(forms, form, partial(_right_answer, forms))
        return True
    _settle(form, lesson)
    item = st.query_params.get("item") or str(_next_open(form, lesson))
    number = url_int(item)
    if item == "end" or (number is not None and number > len(lesson.steps)):
        if not _finished(form, lesson):
            st.warning("Some questions of this check are not answered yet; they count as not "
                       "taken.")
            st.button("Answer the rest", key="check_rest",
                      on_click=partial(go, form, _next_open(form, lesson)))
        show_map(forms, form)
        return True
    _item(form, lesson, number if number is not None and number >= 1 else 1)
    return True
