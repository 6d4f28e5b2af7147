"""The concept check in a live class: each student answers on their own screen at their own
pace, and every answer also goes to the class's store; the teacher's screen (the one the room
watches) shows how far the class is and what it got right before and after the course, with
the items that moved least and the results as a CSV file. No name appears anywhere here.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from classroom.check_map import (
    item_rows, misconception_rows, moved_least, question_id, results_csv,
)
from teaching.concept_check import FORMS
from teaching.format import Lesson
from teaching.syllabus import misconceptions
from viz.class_check import check_map

from ui import class_answers, class_session
from ui.charts import chart_config
from ui.text import md_escape

MAP_SECONDS = 0.5  # the teacher's map redraws this often while answers come in (the store only)
TAKES = {"before": "The class takes the first check", "after": "The class takes the second check"}
KEPT_KEY = "_class_check_tallies"  # the last tallies read, kept on screen while out of touch


def send(form: str, item: int, choice: str) -> None:
    """A student in a class: the answer also goes to the store (kept while out of touch)."""
    m = class_session.student()
    if m is not None and not m.ended:
        class_answers.send(m, question_id(form, item), str(choice)[:100])


def leads_a_class() -> bool:
    m = class_session.teacher()
    return m is not None and not m.ended


def start_buttons(row, go: Callable[[str, str], None]) -> None:
    """The teacher of a class, on the lesson list: lead the class into either check."""
    row.button("Give the class the first check", key="class_check_before", type="primary",
               on_click=go, args=("before", "class"),
               help="Everyone answers on their own screen; your screen shows how far the "
               "class is and what it got right, without names.")
    row.button("Give the class the second check", key="class_check_after",
               on_click=go, args=("after", "class"))


def _tallies(teacher_key: str, forms: dict[str, Lesson]) -> dict | None:
    from teaching.class_store import ClassError, StoreDown

    store = class_session.store()
    try:
        got = {form: {n: store.tally(teacher_key, question_id(form, n)).counts
                      for n in range(1, len(forms[form].steps) + 1)} for form in FORMS}
    except StoreDown:  # out of touch (the class bar says so): the last count stays
        return st.session_state.get(KEPT_KEY)
    except ClassError as exc:
        st.error(str(exc))
        return None
    st.session_state[KEPT_KEY] = got
    return got


def _progress(tallies: dict, form: str) -> str:
    answered = [sum(c.values()) for c in tallies[form].values()]
    if not any(answered):
        return "Nobody has answered yet: the class sees the first question on their screens."
    every, some = min(answered), max(answered)
    return (f"{every} {'student has' if every == 1 else 'students have'} answered every "
            f"question; {some} answered at least one.")


@st.fragment(run_every=MAP_SECONDS)
def _live_map(form: str, forms: dict[str, Lesson],
              right_answer: Callable[[str, int], str]) -> None:
    m = class_session.teacher()
    if m is None:
        return
    tallies = _tallies(m.teacher_key, forms)
    if tallies is None:
        return
    st.markdown(_progress(tallies, form))
    # an item's right answer is worked out from the model once someone has answered it (once
    # per server: the same as for a learner alone)
    with st.spinner("Working out the right answers from the model…"):
        rights = {f: {n: right_answer(f, n)[:100] for n, counts in tallies[f].items() if counts}
                  for f in FORMS}
    rows = item_rows(forms, tallies, rights)
    beliefs = misconceptions()
    mapped = misconception_rows(rows)
    took = tuple(max((r.before.answered, r.after.answered)[i] for r in rows) for i in (0, 1))
    fig = check_map([beliefs[r.misconception].belief for r in mapped],
                    [r.before.value for r in mapped], [r.after.value for r in mapped], took)
    st.plotly_chart(fig, key="class_check_map", config=chart_config("class-check"))
    least = moved_least(rows)
    if least:
        st.markdown("**Moved least** (right before → after):\n"
                    + "\n".join(f"- {md_escape(beliefs[r.misconception].belief)} "
                                f"{r.before.value:.0%} → {r.after.value:.0%}" for r in least))
    st.download_button("Download the class's results (CSV, no names)", results_csv(rows),
                       file_name="class-check.csv", mime="text/csv", key="class_check_csv")


def teacher_screen(forms: dict[str, Lesson], form: str,
                   right_answer: Callable[[str, int], str]) -> None:
    """The teacher's screen while the class takes a check: how far it is, and its map."""
    st.title(TAKES[form], anchor=False)
    st.caption("Each student answers on their own screen, at their own pace, and sees their "
               "own map at the end. This screen shows the whole class, without names: each "
               "common mix-up with the share of the class right before the course and after.")
    _live_map(form, forms, right_answer)
