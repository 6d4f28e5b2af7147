"""A following student who changes their own view starts looking around, and says so.

While a student follows the teacher, the lesson's Previous and Next are not shown (the teacher
moves the steps; ui/class_bar.following_line). Any other control that changes what the
student's screen shows (another page, the sidebar's model or text, a page's setting such as a
layer or head slider, also on a lesson step's page) makes the student look around on their
own: the bar says so and the teacher's headcount counts them there, instead of the teacher's
next change pulling them back.

How a change is told from the teacher's: at the end of each whole run the session keeps what
its screen showed (the page, the sidebar's model and texts, every declared page setting) with
the class view version it had taken. At the top of the next run, or at the end of a page's
fragment run alone (a slider inside it, class_follow.after_fragment), another page, or a value that differs while the version
did not move, was changed on this screen; except these, which are not the student's doing:
- a value the app itself wrote over on this screen while the teacher's current view or the
  one before it was taken (what the view before showed, a value a run began with and then
  replaced): a browser that had not drawn the new value yet sends the old one back, as it did
  under load right after a lesson step changed;
- on a lesson step, the step's own value as the step wrote it when it was drawn (its settings
  with those the teacher moved in it, ui/lesson_step.py); a step sets its own texts and
  settings, so on a lesson step a value is compared as on any page, with these allowed;
- a value Streamlit dropped (a widget not drawn), and anything on or after the join page;
- the lesson step in the address (a rerun the browser asked for before it saw the teacher's
  newest step still names the old one; a following student has no Previous/Next anyway).

While a run that opens the teacher's newest view is pending (TAKING_KEY: it began and has not
finished, e.g. cut short by a new request), the session knows what that view sets (`taking`,
called with its link; with the views of earlier cut-short runs): a page that is neither the
one last shown nor the teacher's is the student's, and so is a value the teacher's view sets
(the sidebar's model and texts, the settings its link names; on a lesson step, once the step
was drawn, its own values) that is none of the last shown one, the teacher's, one replaced as
above and one a cut-short run began with.

Not told apart (that student keeps following; the teacher's next change brings their screen
back): while a take is pending, a setting the teacher's view leaves to its page (at its
default, so not in its link) and a lesson step's values before the step was first drawn; a
setting changed back to a value the app wrote over since the take before last (the old
step's, say); and a page that clamps a value the teacher's link names to another one while
its take is cut short (the teacher's page clamped it the same way, so this needs a model the
student opens instead of the teacher's, ui/class_models.py).
"""

from __future__ import annotations

import streamlit as st

from teaching.pages import BY_PATH, PAGE_SPECS

from .view_state import MODEL_KEY, OTHER, OTHER_KEY, PAIR_KEY, TEXT_KEY, ViewState

# (class view version, runs that began taking it): a student's run opening the teacher's
# newest view; until one of them finishes (ui/class_follow.after_run) the take is pending
TAKING_KEY = "_class_taking"
SHOWN_KEY = "_class_shown"  # session state: (version, page, {key: value}) at the last run's end
TOP_KEY = "_class_top"  # {key: values}: at the tops of runs since the last whole run's end
# {key: ((version taken, value), ...)}: values the app wrote over (`remember`), newest last
REPLACED_KEY = "_class_replaced"
# the views runs began opening since the last whole run's end (`taking`): (newest version,
# their pages, {key: values their links set}, their lesson steps (lesson id, number))
PENDING_KEY = "_class_pending"
KEEP_VALUES = 6  # values kept per key (newest last)
UNFOLLOWED = ("teach", "join")  # pages a class never shows (ui/class_follow.NOT_FOLLOWED)
SIDEBAR_KEYS = (MODEL_KEY, OTHER_KEY, TEXT_KEY, PAIR_KEY)
SETTING_KEYS = tuple(spec.key(s.name) for spec in PAGE_SPECS for s in spec.settings)
# a choice with nothing chosen is its default on screen (the Attention page's "More" control,
# which a browser under load was seen to send back empty with nobody touching it)
CHOICE_DEFAULTS = {spec.key(s.name): s.default for spec in PAGE_SPECS for s in spec.settings
                   if s.kind == "choice" and s.default is not None}


def _values() -> dict:
    """The sidebar's and the pages' settings as the screen shows them."""
    state = st.session_state
    return {key: CHOICE_DEFAULTS.get(key) if state[key] is None else state[key]
            for key in SIDEBAR_KEYS + SETTING_KEYS if key in state}


def _differs(a, b) -> bool:
    try:
        return bool(a != b)
    except (TypeError, ValueError):  # e.g. arrays: compared by what they print
        return repr(a) != repr(b)


def _among(value, values) -> bool:
    return any(not _differs(value, v) for v in values)


def _forget() -> None:
    for key in (SHOWN_KEY, TOP_KEY, REPLACED_KEY, PENDING_KEY):
        st.session_state.pop(key, None)


def remember(m, page: str) -> None:
    """At the end of a whole run: what a following student's screen shows now, and the values
    the app wrote over (shown at the last whole run's end, or at a run's top since)."""
    if m is None or m.teacher or not m.following or m.ended:
        _forget()
        return
    state = st.session_state
    now = _values()
    kept = state.get(SHOWN_KEY)
    replaced = _recent(state.get(REPLACED_KEY, {}), m.version)
    before = {key: (value,) for key, value in (kept[2] if kept else {}).items()}
    for key, values in (state.pop(TOP_KEY, None) or {}).items():
        before[key] = before.get(key, ()) + values
    for key, values in before.items():
        for value in values:
            if key in now and _differs(value, now[key]):
                old = [e for e in replaced.get(key, ()) if _differs(e[1], value)]
                replaced[key] = tuple(old + [(m.version, value)])[-KEEP_VALUES:]
    state[REPLACED_KEY] = replaced
    state[SHOWN_KEY] = (m.version, page, now)
    state.pop(PENDING_KEY, None)


def _recent(replaced: dict, version: int) -> dict:
    """The values replaced while this view or the one before it was taken (by the class view
    version that was taken when they were replaced)."""
    tags = sorted({tag for values in replaced.values() for tag, _ in values} | {version})[-2:]
    return {key: kept for key, values in replaced.items()
            if (kept := tuple(e for e in values if e[0] in tags))}


def taking(version: int, link: str) -> None:
    """A student's run begins opening the class's view `link` (ui/class_follow.before_run):
    keep what it sets, to tell a change of the student's from it while the take is pending.
    Views opened by runs cut short since the last whole run are kept too (a browser may still
    send back what one of them drew)."""
    from . import class_models

    page, params = ViewState.split_link(link)
    _, pages, sets, steps = st.session_state.get(PENDING_KEY) or (None, (), {}, ())
    if page not in BY_PATH or page in UNFOLLOWED:
        st.session_state.pop(PENDING_KEY, None)
        return
    params = class_models.openable(params, None)  # the model this screen opens
    sets = dict(sets)
    if page == "lessons":
        from .urlstate import url_int

        steps = steps + ((str(params.get("lesson", "")), url_int(params.get("step", "1"))),)
    else:
        view = ViewState.from_link(page, params)
        _add(sets, MODEL_KEY, view.model, OTHER)
        _add(sets, OTHER_KEY, view.model)
        _add(sets, TEXT_KEY, view.text)
        _add(sets, PAIR_KEY, view.pair)
        for name, value in view.settings.items():  # those at their default: the page's
            _add(sets, view.spec.key(name), _widget(value))
    st.session_state[PENDING_KEY] = (version, pages + (page,), sets, steps)


def _add(values: dict, key: str, *new) -> None:
    """Add `new` to the values kept for `key` (each once, newest last, at most KEEP_VALUES)."""
    old = [v for v in values.get(key, ()) if not _among(v, new)]
    values[key] = tuple(old + list(new))[-KEEP_VALUES:]


def _widget(value):
    return [tuple(pair) for pair in value] if isinstance(value, list) else value


def _step_values(steps: tuple = ()) -> dict:
    """{key: values}: the lesson step's own values as it wrote them when it was last drawn, if
    that step is one of `steps` (or any step, when none are given); {} otherwise."""
    from .lesson_step import STEP_VIEW_KEY, given_settings

    drawn = st.session_state.get(STEP_VIEW_KEY)
    if not drawn or (steps and tuple(drawn[:2]) not in steps):
        return {}
    view: ViewState = drawn[2]
    moved_ = given_settings(*drawn[:2])
    out = {TEXT_KEY: (view.text,), PAIR_KEY: (view.pair,),
           MODEL_KEY: (view.model, OTHER), OTHER_KEY: (view.model,)}
    for name, value in {**view.settings, **moved_}.items():
        if name in view.spec.by_name:
            out[view.spec.key(name)] = (value, _widget(value))
    return out


def _changed(kept: dict, also: dict, only=None) -> bool:
    """Does a value now differ from the kept one, from `also`'s values for its key and from
    every value the app replaced? (`only`: the keys compared; None: every kept key)."""
    now = _values()
    replaced = st.session_state.get(REPLACED_KEY, {})
    for key in kept if only is None else only:
        if key not in now:
            continue  # Streamlit dropped it: a widget not drawn
        allowed = ((kept[key],) if key in kept else ()) + also.get(key, ()) + \
            tuple(value for _, value in replaced.get(key, ()))
        if not _among(now[key], allowed):
            return True
    return False


def _moved_while_taking(version: int, shown_page: str, kept: dict, page: str | None) -> bool:
    """A take of the class's view `version` is pending: the student's own move is a page that
    is none of the one shown and the teacher's, or a value a teacher's view sets that is none
    of the shown one, the teacher's, one replaced and one a cut-short run began with."""
    pending = st.session_state.get(PENDING_KEY)
    if pending is None or pending[0] != version:
        return False  # what the teacher's view sets is not known here
    _, pages, sets, steps = pending
    if page is not None and page != shown_page and page not in pages:
        return True
    sets = dict(sets)
    for key, values in _step_values(steps).items() if steps else ():  # once a step was drawn
        sets[key] = sets.get(key, ()) + values
    for key, values in (st.session_state.get(TOP_KEY) or {}).items():
        if key in sets:
            sets[key] = sets[key] + values
    return _changed(kept, sets, only=list(sets))


def moved(m, page: str | None) -> bool:
    """Did this screen change its view by itself since the last whole run? (page None: the
    page is not known here, as in a fragment's rerun; only values are compared)."""
    kept = st.session_state.get(SHOWN_KEY)
    if kept is None or m is None or m.teacher or not m.following or m.ended:
        return False
    version, shown_page, values = kept
    if shown_page in UNFOLLOWED or page in UNFOLLOWED:  # the join page: the class's next
        return False  # page is no move, and a rerun that names the join page leaves nothing
    taking_ = st.session_state.get(TAKING_KEY)
    if taking_ is not None:  # still opening the teacher's new view
        return _moved_while_taking(taking_[0], shown_page, values, page)
    if version != m.version:  # the teacher's view was taken since: not the student's doing
        return False
    if page is not None and page != shown_page:
        return True
    own = _step_values() if shown_page == "lessons" else {}  # the step's values, as it wrote
    return _changed(values, own)


def check(m, page: str | None, look_around) -> bool:
    """A following student who moved on their own now looks around (`look_around()`, which
    tells the store); True when so. At the top of a whole run (page given) the values it
    starts with are kept, so `remember` knows which ones the app wrote over."""
    if moved(m, page):
        _forget()
        look_around()
        m.moved_away = True
        return True
    if page is not None:
        tops = dict(st.session_state.get(TOP_KEY) or {})
        for key, value in _values().items():
            _add(tops, key, value)
        st.session_state[TOP_KEY] = tops
    return False
