"""A lesson step's question in a live class: every following student's answer goes to the
store, and the answer is revealed to everyone at once by the teacher.

`hold` is the one call ui/lesson_question.py makes. Outside a class it returns None and the
question behaves as it always did. A following student's answer is sent (question id
"<lesson id>:<step>"; the choice is the option's words, or "row,col" for a clicked cell), and
the step then waits for the teacher's reveal. The teacher (whose screen the room watches) sees
no options of their own: the question, the live count per option (or the clicked keys), names
only when asked, and "Reveal to everyone" beside the figure's place, all in the first screen
(`teacher_waits`: the lessons page puts the step's words after them); after the reveal the
model's answer beside the class's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from teaching.facts import find_row, plain
from teaching.format import Step
from teaching.render import safe_markdown
from viz.class_tally import cell_tally, choice_tally
from viz.labels import visible_text

from . import class_session
from .charts import chart_config
from .class_session import Membership
from .text import md_escape

if TYPE_CHECKING:  # pandas is imported where a table is made
    import pandas as pd

TALLY_SECONDS = 1.0  # the teacher's live count redraws this often
NAMES_KEY = "class_show_names"
REVEAL_KEY = "class_reveal"
TALLY_KEY = "_class_tally"  # the teacher's last count, kept on screen while out of touch


def question_id(lesson_id: str, number: int) -> str:
    return f"{lesson_id}:{number}"


def hold(lesson_id: str, number: int, step: Step, settings: dict, texts: dict,
         got: dict | None) -> bool | None:
    """None: ask as usual. False: keep the step's figure hidden (a student waiting for the
    reveal, or the teacher before it). True: the teacher after the reveal (show the figure)."""
    m = class_session.current()
    if m is None or m.ended:
        return None
    question = question_id(lesson_id, number)
    if m.teacher:
        return _teacher(m, question, step, settings, texts)
    if not m.following or got is None:
        return None
    send(m, question, _choice(step, settings, texts, got))
    if question in _revealed(m):
        return None
    if question in m.unsent:
        st.info("Your answer is kept here and goes to the teacher as soon as the class is "
                "back in touch.")
    else:
        st.info("Your answer is in; the teacher will reveal the answer to everyone.")
    return False


def given(lesson_id: str, number: int) -> str | None:
    """The answer this student's class holds for the question (e.g. from before a reload or
    a server restart: ui/class_session.restore reads it back), as the store keeps it."""
    m = class_session.student()
    if m is None:
        return None
    question = question_id(lesson_id, number)
    return m.unsent.get(question) or m.sent.get(question)


def _revealed(m: Membership) -> frozenset:
    if m.lost:  # out of touch: as the bar's poll last saw it (it reads again)
        return m.revealed
    try:
        m.revealed = frozenset(class_session.store().view(m.class_id).revealed)
    except Exception:  # noqa: BLE001 - gone or out of touch: the bar's poll says which
        pass
    return m.revealed


def send(m: Membership, question: str, choice: str | None) -> None:
    """Send this student's answer once (a changed answer replaces the old one)."""
    if choice is None or m.sent.get(question) == choice:
        return
    from teaching.class_store import ClassError, StoreDown

    if m.lost:  # out of touch: kept, and sent by the poll that finds the store again
        m.unsent[question] = choice
        return
    try:
        if class_session.store().answer(m.class_id, m.member_key, question, choice):
            m.sent[question] = choice
        m.unsent.pop(question, None)
    except StoreDown:  # kept, and sent by the poll that finds the store again
        m.unsent[question] = choice
        from .class_follow import lost_touch

        lost_touch(m)
    except ClassError as exc:
        st.error(str(exc))


def _cell_row(step: Step, texts: dict):
    from .cache import cached_run

    trace = cached_run(step.model, step.text, step.pair)
    return trace, find_row(trace.tokens, texts["row"])


def _choice(step: Step, settings: dict, texts: dict, got: dict) -> str | None:
    """The answer as the store keeps it: the option's words, or "row,col" of the key clicked
    (the first key of the row with that token and that share)."""
    if step.question.kind == "choice":
        return str(got["picked"])[:100]
    trace, row = _cell_row(step, texts)
    weights = trace.attentions[int(settings.get("layer", 0)), int(settings.get("head", 0)), row]
    for col, token in enumerate(trace.tokens):
        if visible_text(plain(token)) == got["picked"] and (
                got.get("share") is None or abs(float(weights[col]) - got["share"]) < 1e-6):
            return f"{row},{col}"
    return None


# ------------------------------------------------------------------------ the teacher
def leading() -> bool:
    """This session leads a live class: its screen is the one the room watches, so a question
    shows the class's answers and never the learner's own options."""
    m = class_session.teacher()
    return m is not None and not m.ended


def teacher_waits(lesson_id: str, number: int) -> bool:
    """The teacher of a live class on a question not revealed yet: the step shows the class's
    answers, the figure's place and "Reveal to everyone" first, its words after them."""
    m = class_session.teacher()
    if m is None or m.ended:
        return False
    try:
        revealed = class_session.store().view(m.class_id).revealed
    except Exception:  # noqa: BLE001 - a gone class or store: the step as usual
        return False
    return question_id(lesson_id, number) not in revealed


def _teacher(m: Membership, question: str, step: Step, settings: dict, texts: dict) -> bool:
    from teaching.class_store import ClassError, StoreDown

    try:
        if m.lost:  # out of touch (the bar says so): no call to wait for
            raise StoreDown(m.class_id)
        revealed = question in class_session.store().view(m.class_id).revealed
    except StoreDown:  # out of touch (the bar says so): the step as it was, not revealed
        revealed = False
    except ClassError as exc:
        st.error(str(exc))
        return True
    shape = _shape(step, settings, texts, revealed)
    if revealed:
        st.markdown(f"**Ask the class.** {safe_markdown(texts['prompt'])}")
        if shape.get("answer_text"):
            st.success(f"The model's answer: “{md_escape(shape['answer_text'])}”.")
        _live_tally(m.teacher_key, question, shape)
        return True
    _waiting(m, question, shape, texts)
    return False


def _waiting(m: Membership, question: str, shape: dict, texts: dict) -> None:
    """Before the reveal, in the first screen: the step's title, the question and the figure's
    place on one side; "Reveal to everyone" and the class's answers, live, on the other (one
    under the other where both do not fit: ui/page_style.py)."""
    words, answers = st.container(key="pair_class_question").columns([3, 2], gap="medium")
    with words:
        st.header(texts["title"], anchor=False)
        st.markdown(f"**Ask the class.** {safe_markdown(texts['prompt'])}")
        with st.container(border=True, key="class_figure_place"):
            st.caption("The figure appears when you reveal the answer, on every screen at "
                       "once.")
    with answers:
        st.button("Reveal to everyone", key=REVEAL_KEY, type="primary",
                  icon=":material/visibility:", on_click=_reveal, args=(question,),
                  width="stretch",
                  help="Shows the answer and the figure on every student's screen at once.")
        _live_tally(m.teacher_key, question, shape, compact=True)
        code = class_session.shown_code(m.join_code)
        if code:
            st.caption(f"Late? Join with the code **{md_escape(code)}**.")


def _reveal(question: str) -> None:
    m = class_session.teacher()
    if m is None:
        return
    from teaching.class_store import ClassError

    try:
        class_session.store().reveal(m.teacher_key, question)
    except ClassError as exc:
        st.session_state["_class_error"] = str(exc)


def _shape(step: Step, settings: dict, texts: dict, revealed: bool) -> dict:
    """What the tally draws, worked out once in the whole run (the fragment reruns alone)."""
    if step.question.kind == "choice":
        options = [texts[f"option{i}"] for i in range(len(step.question.options))]
        answer = None
        if revealed:
            from .lesson_step import step_texts

            right = step_texts(step)[1]["answer"]
            answer = options.index(right) if right in options else None
        return {"kind": "choice", "options": options, "answer": answer,
                "answer_text": options[answer] if answer is not None else ""}
    trace, row = _cell_row(step, texts)
    weights = None
    if revealed:
        weights = trace.attentions[int(settings.get("layer", 0)), int(settings.get("head", 0)),
                                   row].float().tolist()
    return {"kind": "cell", "tokens": [plain(t) for t in trace.tokens], "row": row,
            "weights": weights}


@st.fragment(run_every=TALLY_SECONDS)
def _live_tally(teacher_key: str, question: str, shape: dict, compact: bool = False) -> None:
    """The class's answers as they come in (no model work: the store only); `compact`: a
    lower figure, beside "Reveal to everyone" and the figure's place."""
    from teaching.class_store import ClassError, StoreDown

    names = bool(st.session_state.get(NAMES_KEY))
    kept = st.session_state.get(TALLY_KEY)
    m = class_session.teacher()
    try:
        if m is not None and m.lost:  # out of touch (the bar says so): no call to wait for
            raise StoreDown(question)
        tally = class_session.store().tally(teacher_key, question, with_names=names)
        st.session_state[TALLY_KEY] = tally
    except StoreDown:  # out of touch (the bar says so): the last count stays on screen
        if kept is None or kept.question != question:
            return
        tally = kept
    except ClassError as exc:
        st.error(str(exc))
        return
    if shape["kind"] == "choice":
        counts = [tally.counts.get(o[:100], 0) for o in shape["options"]]
        fig = choice_tally(shape["options"], counts, shape["answer"], compact=compact)
    else:
        counts = [tally.counts.get(f"{shape['row']},{c}", 0) for c in range(len(shape["tokens"]))]
        fig = cell_tally(shape["tokens"], counts, shape["weights"],
                         row_label=shape["tokens"][shape["row"]], compact=compact)
    st.plotly_chart(fig, key="class_tally_chart", config=chart_config("class-answers"))
    st.checkbox("Show names", key=NAMES_KEY,
                help="Off, nobody's name is shown, on the projector or here.")
    if names and tally.names:
        st.dataframe(_names_table(tally.names, shape), hide_index=True, width="stretch")


def _names_table(names: dict, shape: dict) -> "pd.DataFrame":
    """Who chose what, as plain text in a table (never Markdown)."""
    rows = []
    for choice, who in names.items():
        shown = choice
        if shape["kind"] == "cell":
            col = choice.partition(",")[2]
            shown = shape["tokens"][int(col)] if col.isdecimal() and \
                int(col) < len(shape["tokens"]) else choice
        rows.append({"answer": shown, "names": ", ".join(who)})
    import pandas as pd  # here: the lessons page imports this module, most runs need no table

    return pd.DataFrame(rows, columns=["answer", "names"])
