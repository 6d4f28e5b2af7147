"""Predict, then reveal: a lesson step's question. The step's figure stays hidden until the
learner has answered; then the answer is checked against the run and explained."""

from __future__ import annotations

from functools import partial

import streamlit as st

from teaching.facts import find_row, plain
from teaching.format import Step
from teaching.render import safe_markdown
from viz.labels import visible_text
from viz.lesson import blind_heatmap, clicked_key

from . import class_answers
from .cache import cached_run
from .charts import chart_config
from .text import md_escape

ANSWERS_KEY = "lesson_answers"  # session state: (lesson id, step) -> {"picked", "share", "right"}
TIE = 1e-6  # a cell within this of the row's maximum counts as the brightest


def answer_of(lesson_id: str, number: int) -> dict | None:
    return st.session_state.get(ANSWERS_KEY, {}).get((lesson_id, number))


def _record(where: tuple, picked: str, right: bool, share: float | None = None) -> None:
    """`picked` is the text of the learner's choice (an option, or the key token as shown);
    `share` the attention that key gets, for a cell question."""
    st.session_state.setdefault(ANSWERS_KEY, {})[where] = {"picked": picked, "share": share,
                                                          "right": right}


def said_choice(got: dict) -> str:
    """The learner's choice in a sentence, quoted and escaped: “the”, which gets 0% of the row."""
    text = " ".join(str(got["picked"]).split()) or str(got["picked"])
    quoted = md_escape(text) if text[:1] == "“" and text[-1:] == "”" else f"“{md_escape(text)}”"
    if got.get("share") is None:
        return quoted
    return f"{quoted}, which gets {got['share']:.0%} of the row"


def _check_choice(where: tuple, box_key: str, step: Step) -> None:
    """Check the guess; the answer is worked out only now (it may need a training run)."""
    picked = st.session_state.get(box_key)
    if picked is not None:
        from .lesson_step import step_texts

        _record(where, picked, picked == step_texts(step)[1]["answer"])


def _pick_cell(where: tuple, step: Step, settings: dict, row_text: str, source: str) -> None:
    """A click on the blind heatmap, or the token chosen in the box under it."""
    trace = cached_run(step.model, step.text, step.pair)
    row = find_row(trace.tokens, row_text)
    if source == "chart":
        points = getattr(getattr(st.session_state.get("lesson_cell_chart"), "selection", None),
                         "points", None)
        column = clicked_key(points)
    else:
        column = st.session_state.get("lesson_cell_box")
    _record_cell(where, settings, trace, row, column)


def _record_cell(where: tuple, settings: dict, trace, row: int, column) -> None:
    if column is None or not (0 <= column < len(trace.tokens) and 0 <= row < len(trace.tokens)):
        return
    weights = trace.attentions[int(settings.get("layer", 0)), int(settings.get("head", 0)), row]
    right = float(weights[column]) >= float(weights.max()) - TIE
    _record(where, visible_text(plain(trace.tokens[column])), right, float(weights[column]))


def _recall(where: tuple, step: Step, settings: dict, texts: dict) -> None:
    """A student in a live class whose session has no answer here, but whose class holds one
    (given before a reload or a server restart): that answer, as if just given."""
    choice = class_answers.given(*where)
    if choice is None:
        return
    if step.question.kind == "choice":
        from .lesson_step import step_texts

        options = [texts[f"option{i}"] for i in range(len(step.question.options))]
        picked = next((o for o in options if o[:100] == choice), choice)
        _record(where, picked, picked == step_texts(step)[1]["answer"])
        return
    row_col = choice.split(",")
    if len(row_col) == 2 and all(part.isdecimal() for part in row_col):
        trace = cached_run(step.model, step.text, step.pair)
        _record_cell(where, settings, trace, int(row_col[0]), int(row_col[1]))


def ask(lesson_id: str, number: int, step: Step, settings: dict, texts: dict) -> bool:
    """Draw the question; True once the learner has answered (the figure may be shown)."""
    if class_answers.leading():  # the teacher of a live class: the class answers, not them
        return bool(class_answers.hold(lesson_id, number, step, settings, texts, None))
    q = step.question
    where = (lesson_id, number)
    if answer_of(lesson_id, number) is None:
        _recall(where, step, settings, texts)
    st.markdown(f"**Predict first.** {safe_markdown(texts['prompt'])}")
    if q.kind == "choice":
        options = [texts[f"option{i}"] for i in range(len(q.options))]
        box = f"lesson_choice_{lesson_id}_{number}"
        st.radio("Your answer", options, index=None, key=box, label_visibility="collapsed")
        nothing = st.session_state.get(box) is None
        st.button("Check my answer", key="lesson_check", type="primary", disabled=nothing,
                  help="Pick one answer first." if nothing else None,
                  on_click=partial(_check_choice, where, box, step))
    else:
        trace = cached_run(step.model, step.text, step.pair)
        row = find_row(trace.tokens, texts["row"])
        values = None
        if answer_of(lesson_id, number) is not None:  # answered: the row's real values
            values = trace.attentions[int(settings.get("layer", 0)),
                                      int(settings.get("head", 0)), row].float().numpy()
        st.plotly_chart(blind_heatmap(trace.tokens, row, f"Row of “{plain(trace.tokens[row])}”: "
                                      "which key gets the most attention?", values),
                        key="lesson_cell_chart", selection_mode="points",
                        config=chart_config("lesson-question"),
                        on_select=partial(_pick_cell, where, step, settings, texts["row"],
                                          "chart"))
        st.selectbox("Or choose the key token", list(range(len(trace.tokens))), index=None,
                     key="lesson_cell_box", format_func=lambda i: f"{i} · {plain(trace.tokens[i])}",
                     placeholder="Click a cell in the highlighted row, or choose here…",
                     on_change=partial(_pick_cell, where, step, settings, texts["row"], "box"))
    got = answer_of(lesson_id, number)
    if (held := class_answers.hold(lesson_id, number, step, settings, texts, got)) is not None:
        return held  # in a live class: answers go to the teacher, who reveals them
    if got is None:
        first = ("Pick one answer first, then press **Check my answer**" if q.kind == "choice"
                 else "Make your guess first")
        st.info(f"{first}: the figure and the answer appear once you have.")
        return False
    if "reveal" not in texts:  # answered in a callback of this run: fill in the answer now
        from .lesson_step import step_texts

        texts.update(step_texts(step)[1])
    if got["right"]:
        said = "" if got.get("share") is not None else f": {said_choice(got)}"
        st.success(f"Right{said}. {safe_markdown(texts['reveal'])}")  # a cell's reveal names it
    else:
        next_move = ("The figure above now shows the row's real values: find its brightest "
                     "square, or read on." if q.kind == "cell"
                     else "Look at the figure and try again, or read on.")
        st.warning(f"Not quite: you chose {said_choice(got)}. {next_move}")
        with st.expander("Show the answer"):
            st.markdown(safe_markdown(texts["reveal"]) or md_escape(texts["answer"]))
    return True
