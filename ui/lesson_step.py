"""A lesson step in the app: its facts, the state it puts the app in, and its link.

A step opens one page of the app in a given state: the sidebar's model and text and the page's
own settings are set in the session (from a Previous/Next click, or from the link
/lessons?lesson=<id>&step=<n> before the sidebar is drawn), then the lessons page draws that
page's one figure for the step (teaching/figures.py) beside the step's explanation; a page
with no figure there runs whole under it.
"""

from __future__ import annotations

import importlib

import streamlit as st

from teaching import resolve
from teaching.facts import FactError, induction_run
from teaching.figures import figure_of
from teaching.format import Lesson, LessonError, Step
from teaching.resolve import step_settings
from server.training_runs import default_settings

from . import view_state
from .cache import cached_run, get_model, shared
from .lesson_library import catalogue
from .model_names import NAMES
from .page_registry import module_name, run_in_lesson
from .urlstate import url_int
from .view_state import ViewState

AT_KEY = "_lesson_at"  # (lesson id, step number) the session's state was last set for
DRAWN_KEY = "_lesson_drawn"  # (lesson id, step number) whose page was last drawn
STEP_VIEW_KEY = "_lesson_step_view"  # (lesson id, number, the step's own view) last drawn
GIVEN_KEY = "_lesson_given"  # (lesson id, number, {setting: value}) the step's link changed


@shared("induction-run")
def _induction(key: str) -> dict:
    return induction_run(default_settings("induction"))


def _runner(model: str, text: str, pair: str) -> tuple:
    return get_model(model), cached_run(model, text, pair)


def _train() -> dict:
    return _induction("induction")


def shown_name(model: str) -> str:
    """A model's name in a lesson's sentences, as the app shows it: "MiniLM", not "minilm"."""
    return NAMES.get(model, model)


def resolved_settings(step: Step) -> dict:
    """The step's page settings with facts filled in from the run (range-checked)."""
    return step_settings(step, _runner, _train, shown_name)[0]


def step_texts(step: Step, with_answer: bool = True) -> tuple[dict, dict[str, str]]:
    """(resolved settings, {title, explain, prompt, row, option0..., and with the answer:
    answer, reveal})."""
    with st.spinner("Working out this step's numbers from the model…"):
        settings_, texts, _ = resolve.step_texts(step, _runner, _train, with_answer,
                                                   shown_name)
    return settings_, texts


def apply_step(lesson: Lesson, number: int) -> None:
    """Put the session in step `number` (1-based) of the lesson: model, text, page settings.
    Callbacks and app.py (before the sidebar is drawn) call this; problems are kept for the
    page to show, never raised."""
    step = lesson.steps[number - 1]
    st.session_state[AT_KEY] = (lesson.id, number)
    st.session_state[GIVEN_KEY] = (lesson.id, number, link_settings(step))
    st.session_state.pop(DRAWN_KEY, None)
    st.session_state.pop("_lesson_problem", None)
    view_state.apply(ViewState(step.page, step.model, step.text, step.pair))
    try:
        resolved = resolved_settings(step)
    except (FactError, LessonError, ValueError) as exc:
        st.session_state["_lesson_problem"] = str(exc)
        return
    if step.page == "training" and "task" in resolved:
        st.session_state.pop("train_layers", None)  # the page sets the task's default size
    view_state.apply(step_view(step, resolved))


def step_view(step: Step, resolved: dict) -> ViewState:
    """The view a step shows: exactly what its link, or Previous and Next, draw."""
    return ViewState(step.page, step.model, step.text, step.pair, resolved)


def given_settings(lesson_id: str, number: int) -> dict:
    """The settings this step's link changed ({} when the link was another step's)."""
    given = st.session_state.get(GIVEN_KEY) or ("", 0, {})
    return given[2] if tuple(given[:2]) == (lesson_id, number) else {}


def keep_settings(lesson_id: str, number: int, step: Step, settings_: dict) -> None:
    """Before the step's page is drawn. Streamlit forgets (or brings back an older value of) a
    widget that a run did not draw, and the page stays hidden until the learner answers; so the
    first time the page is drawn for this step, the step's settings are put in. After that, a
    value the learner changed is kept (a missing one is put back)."""
    spec = view_state.page_view(step.page).spec
    first = st.session_state.get(DRAWN_KEY) != (lesson_id, number)
    st.session_state[STEP_VIEW_KEY] = (lesson_id, number, step_view(step, settings_))
    if first:
        view = step_view(step, {**settings_, **given_settings(lesson_id, number)})
        for setting in spec.settings:  # the step's values; the others back to the defaults
            if setting.name in view.settings:
                st.session_state[spec.key(setting.name)] = view.settings[setting.name]
            else:
                st.session_state.pop(spec.key(setting.name), None)
    else:
        for name, value in settings_.items():
            st.session_state.setdefault(spec.key(name), value)
    st.session_state[DRAWN_KEY] = (lesson_id, number)


# A step's link may change some of its settings (/lessons?lesson=<id>&step=<n>&head=3, as a
# live class's teacher publishes it when they moved a slider in the step): the keys are the
# step page's own link keys (teaching/pages.py), except where the lesson's link itself uses
# one: the walkthrough's "step" is "wkstep" there (its page's prefix before it).
LESSON_LINK_KEYS = ("lesson", "step")


def step_link_key(spec, setting) -> str:
    """A setting's key in a lesson step's link: its page link key, or, where the lesson's own
    link uses that key, the page's prefix and the key ("wkstep")."""
    return f"{spec.prefix}{setting.url}" if setting.url in LESSON_LINK_KEYS else setting.url


def link_settings(step: Step) -> dict:
    """The settings of the step's page that the address gives, checked (bad ones left out)."""
    spec = view_state.page_view(step.page).spec
    found = {}
    for setting in spec.settings:
        raw = st.query_params.get(step_link_key(spec, setting))
        value = None if raw is None else setting.from_url(str(raw))
        if value is not None:
            found[setting.name] = value
    return found


def changed_settings(lesson_id: str, number: int) -> dict[str, str]:
    """The settings this session's step shows that differ from the step's own, as link
    parameters (only settings its page used on its last run); {} when the step was not drawn."""
    kept = st.session_state.get(STEP_VIEW_KEY)
    if not kept or kept[:2] != (lesson_id, number):
        return {}
    own: ViewState = kept[2].normal()  # checked values, as `current` gives them
    spec = own.spec
    used = st.session_state.get(view_state.USED_KEY, {}).get(own.page, set())
    shown = view_state.current(own.page).settings
    out = {}
    for setting in spec.settings:
        if setting.name not in used:
            continue
        value = shown.get(setting.name, setting.default)
        if value is not None and value != own.settings.get(setting.name, setting.default):
            out[step_link_key(spec, setting)] = setting.to_url(value)
    return out


def lesson_from_url() -> tuple[str | None, int | None]:
    params = st.query_params
    return params.get("lesson"), url_int(params.get("step", "1"))


def sync_from_url() -> None:
    """Before the sidebar is drawn: on /lessons?lesson=<id>&step=<n>, put the session in that
    step once (after that, the session's own state is kept)."""
    wanted, number = lesson_from_url()
    if wanted is None:
        return
    lessons, _ = catalogue()
    lesson = lessons.get(wanted)
    if lesson is None or number is None or not 1 <= number <= len(lesson.steps):
        return  # the page says what is wrong
    if st.session_state.get(AT_KEY) != (lesson.id, number):
        apply_step(lesson, number)


def go_to(lesson_id: str, number: int) -> None:
    """A Previous/Next/Start callback: the step's state, and the link that reopens it."""
    lessons, _ = catalogue()
    st.query_params.from_dict({"lesson": lesson_id, "step": str(number)})
    apply_step(lessons[lesson_id], number)


def focused(step: Step) -> bool:
    """Does the step show one figure (True), or its whole page (a page with no figure)?"""
    return bool(figure_of(step.page, step.figure))


def draw_figure(step: Step, selection) -> None:
    """The step's one figure, drawn by its page's `figure(name, selection)` in the step's view
    (put in the session by `keep_settings`); a page with no figure runs whole, its widgets
    keeping their own keys."""
    name = figure_of(step.page, step.figure)
    if not name:
        run_in_lesson(step.page, selection)
        return
    importlib.import_module(module_name(step.page)).figure(name, selection)
