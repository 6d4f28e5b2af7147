"""A following student who changes their own view starts looking around, and says so.

While a student follows the teacher, the lesson's Previous and Next are not shown (the teacher
moves the steps; ui/class_bar.following_line). Any other control that changes what the
student's screen shows (another page, the sidebar's model or text, a page's setting such as a
layer or head slider) makes the student look around on their own: the bar says so and the
teacher's headcount counts them there, instead of the teacher's next change pulling them back.

How a change is told from the teacher's: at the end of each whole run the session keeps what
its screen showed (the page, the sidebar's model and texts, every declared page setting) with
the class view version it had taken. (Not the lesson step in the address: a rerun the browser
asked for before it saw the teacher's newest step still names the old one; a following
student has no Previous/Next anyway.) At the top of the next
run, or at the class bar's poll (a slider inside a page's fragment), a value that differs while
the version did not move was changed on this screen. A value a page writes itself during a
run is already in what was kept; a value Streamlit dropped (a widget not drawn) is not counted
as a change. A change made while the run that opens the teacher's newest view is still going
(before its end) is not told apart: that student keeps following, and the teacher's next
change brings their screen back, as before.
"""

from __future__ import annotations

import streamlit as st

from teaching.pages import PAGE_SPECS

from .view_state import MODEL_KEY, OTHER_KEY, PAIR_KEY, TEXT_KEY

# (class view version, runs that began taking it): a student's run opening the teacher's
# newest view; until one of them finishes (ui/class_follow.after_run) a change is the teacher's
TAKING_KEY = "_class_taking"
SHOWN_KEY = "_class_shown"  # session state: (version, page, {key: value}) at the last run's end
UNFOLLOWED = ("teach", "join")  # pages a class never shows (ui/class_follow.NOT_FOLLOWED)
SIDEBAR_KEYS = (MODEL_KEY, OTHER_KEY, TEXT_KEY, PAIR_KEY)
SETTING_KEYS = tuple(spec.key(s.name) for spec in PAGE_SPECS for s in spec.settings)


def _values() -> dict:
    state = st.session_state
    return {key: state[key] for key in SIDEBAR_KEYS + SETTING_KEYS if key in state}


def remember(m, page: str) -> None:
    """At the end of a whole run: what a following student's screen shows now."""
    if m is None or m.teacher or not m.following or m.ended:
        st.session_state.pop(SHOWN_KEY, None)
        return
    st.session_state[SHOWN_KEY] = (m.version, page, _values())


def _differs(a, b) -> bool:
    try:
        return bool(a != b)
    except (TypeError, ValueError):  # e.g. arrays: compared by what they print
        return repr(a) != repr(b)


def moved(m, page: str | None) -> bool:
    """Did this screen change its view by itself since the last whole run? (page None: the
    page is not known here, as in a fragment's rerun; only values are compared)."""
    kept = st.session_state.get(SHOWN_KEY)
    if kept is None or m is None or m.teacher or not m.following or m.ended:
        return False
    version, shown_page, values = kept
    if st.session_state.get(TAKING_KEY) is not None:  # still opening the teacher's new view
        return False
    if version != m.version:  # the teacher's view was taken since: not the student's doing
        return False
    if shown_page in UNFOLLOWED or page in UNFOLLOWED:  # the join page: the class's next
        return False  # page is no move, and a rerun that names the join page leaves nothing
    if page is not None and page != shown_page:
        return True
    if shown_page == "lessons":  # a lesson step sets its own texts and settings, and a browser
        return False  # may send one back stale: there only leaving the page is a move
    now = _values()
    return any(key in now and _differs(now[key], value) for key, value in values.items())


def check(m, page: str | None, look_around) -> bool:
    """A following student who moved on their own now looks around (`look_around()`, which
    tells the store); True when so."""
    if not moved(m, page):
        return False
    st.session_state.pop(SHOWN_KEY, None)
    look_around()
    m.moved_away = True
    return True
