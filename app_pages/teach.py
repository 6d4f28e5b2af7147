"""Teach with it: record views as steps of a lesson, edit and download the lesson file, open a
lesson file, and run the app for a class."""

from __future__ import annotations

import re
import textwrap
from functools import partial

import pandas as pd
import streamlit as st

from teaching.draft import to_toml
from teaching.facts import FACTS
from teaching.figures import FIGURES
from teaching.format import MAX_LESSON_BYTES, LessonError
from teaching.limits import limits_said
from teaching.pages import PAGES
from server import settings
from ui import class_teach
from ui.lesson_library import EXAMPLE_FILE, FOLDER_KEY, add_upload
from ui.lesson_step import go_to
from ui.page_registry import switch_to
from ui.teacher_tools import draft
from ui.text import md_escape

COMMENT_WIDTH = 44  # a comment line of the sample fits the code box of a narrow screen
COMMENT = re.compile(r'^(?P<code>(?:[^"#]|"[^"]*")*?)\s*#\s?(?P<comment>.*)$')
KINDS = {"": "No question", "choice": "Multiple choice", "cell": "Click the brightest cell"}


def _move(index: int, by: int) -> None:
    steps = draft()["steps"]
    j = index + by
    if 0 <= j < len(steps):
        steps[index], steps[j] = steps[j], steps[index]


def _delete(index: int) -> None:
    draft()["steps"].pop(index)


def _field(widget, label: str, key: str, initial, **kwargs):
    """A widget whose first value comes from the draft (then from the session)."""
    st.session_state.setdefault(key, initial)
    return widget(label, key=key, **kwargs)


def _question(uid: int, question: dict) -> dict | None:
    kind = _field(st.selectbox, "Question", f"teach_k_{uid}", question.get("kind", ""),
                  options=list(KINDS), format_func=KINDS.get)
    if not kind:
        return None
    out = {"kind": kind, "prompt": _field(st.text_input, "Question", f"teach_p_{uid}",
                                          question.get("prompt", ""))}
    if kind == "choice":
        lines = _field(st.text_area, "Answers, one per line; the first is the right one",
                       f"teach_o_{uid}", "\n".join(question.get("options", [])), height=90)
        options = [o.strip() for o in lines.splitlines() if o.strip()]
        out |= {"options": options, "answer": options[0] if options else ""}
    else:
        out["row"] = _field(st.text_input, "Whose row? (a word of the text)", f"teach_r_{uid}",
                            question.get("row", ""))
    out["reveal"] = _field(st.text_input, "Shown after answering", f"teach_v_{uid}",
                           question.get("reveal", ""))
    return out


def _edit_step(i: int, step: dict) -> None:
    """One recorded step's words and question; the widgets write back into the draft."""
    uid = step["uid"]
    with st.expander(f"Step {i + 1}: {PAGES[step['page']][1]} · {step['model']}",
                     expanded=not step.get("explain")):
        step["title"] = _field(st.text_input, "Title", f"teach_t_{uid}", step.get("title", ""))
        step["explain"] = _field(st.text_area, "What to notice (Markdown)", f"teach_e_{uid}",
                                 step.get("explain", ""), height=100)
        shown = ", ".join(f"{k} {v}" for k, v in step["settings"].items())
        st.caption(f"Opens {PAGES[step['page']][1]} with “{md_escape(step['text'][:80])}”"
                   + (f" ({md_escape(shown)})" if shown else ""))
        step["question"] = _question(uid, step.get("question") or {})
        c = st.columns(3)
        c[0].button("Move up", key=f"teach_up_{uid}", on_click=_move, args=(i, -1),
                    disabled=i == 0, width="stretch")
        c[1].button("Move down", key=f"teach_dn_{uid}", on_click=_move, args=(i, 1),
                    disabled=i == len(draft()["steps"]) - 1, width="stretch")
        c[2].button("Delete", key=f"teach_del_{uid}", on_click=_delete, args=(i,),
                    width="stretch")


def _open_lesson(lesson_id: str) -> None:
    """Start a lesson at step 1 and go to the lessons page (a callback)."""
    go_to(lesson_id, 1)
    st.session_state["_teach_open"] = True


def _try_draft(text: str) -> None:
    try:
        lesson = add_upload(text.encode("utf-8"), (draft()["title"] or "my-lesson") + ".toml")
    except LessonError as exc:
        st.session_state["_teach_error"] = str(exc)
        return
    _open_lesson(lesson.id)


def _draft_editor() -> None:
    st.subheader("Your lesson")
    lesson = draft()
    if not lesson["steps"]:
        st.info("Open any page, set it up (model, text, layer, head…), then press **Record "
                "this view as a step** at the bottom of the sidebar. Each step appears here, "
                "ready for your words and an optional question.")
        return
    lesson["title"] = _field(st.text_input, "Lesson title", "teach_title", lesson["title"])
    lesson["summary"] = _field(st.text_input, "One line on what it teaches", "teach_summary",
                               lesson["summary"])
    for i, step in enumerate(list(lesson["steps"])):
        _edit_step(i, step)
    text = to_toml(lesson["title"], lesson["summary"], lesson["steps"])
    c = st.columns(2)
    c[0].download_button("Download the lesson file", text, file_name="lesson.toml",
                         mime="application/toml", key="teach_download", width="stretch")
    c[1].button("Try it now", key="teach_try", on_click=_try_draft, args=(text,),
                width="stretch")
    if "_teach_error" in st.session_state:
        st.error(f"The draft is not a valid lesson yet: "
                 f"{md_escape(st.session_state.pop('_teach_error'))}")
    with st.expander("See the lesson file"):
        st.code(text, language="toml", wrap_lines=True)


def _open_file() -> None:
    st.subheader("Open a lesson file")
    upload = st.file_uploader("A lesson file (.toml)", type=["toml"], key="teach_upload",
                              max_upload_size=MAX_LESSON_BYTES // 1_000_000,  # "Limit 1MB"
                              help=f"At most {MAX_LESSON_BYTES // 1_000_000} MB. It stays in "
                              "this browser: nobody else on the server sees it.")
    if upload is not None:
        try:
            lesson = add_upload(upload.getvalue(), upload.name)
        except LessonError as exc:
            st.error(f"This lesson file has a problem on {md_escape(str(exc))}"
                     if exc.line else f"This lesson file has a problem: {md_escape(str(exc))}")
        else:
            n = len(lesson.steps)
            st.success(f"Opened “{md_escape(lesson.title)}” ({n} step{'s' * (n != 1)}).")
            st.button("Start it", key="teach_start_upload", type="primary",
                      on_click=partial(_open_lesson, lesson.id))
    if settings.hosted():
        st.caption("On this shared server, the lessons folder is chosen by whoever runs it.")
    else:
        st.text_input("Or a folder of lesson files on this computer", key=FOLDER_KEY,
                      placeholder="/path/to/lessons",
                      help="Every .toml file in it appears on the Lessons page.")


def comments_on_own_lines(text: str, width: int = COMMENT_WIDTH) -> str:
    """The sample lesson file as shown: a comment after code goes on its own line above the
    code (with the indented comment lines that carry it on), and a long comment is wrapped
    with a # on every line, so a narrow screen that wraps the code never shows part of a
    comment without its #. The TOML means the same."""
    out, in_string, pending = [], False, None  # pending: [code, comment] not yet written

    def flush() -> None:
        if pending is not None:
            out.extend(f"# {part}".rstrip() for part in textwrap.wrap(pending[1], width - 2))
            out.append(pending[0])

    for line in text.splitlines():
        opens = line.count('"""') % 2 == 1
        match = None if in_string or opens else COMMENT.match(line)
        in_string ^= opens
        if match is not None and pending is not None and not match["code"] and line[:1] == " ":
            pending[1] += " " + match["comment"]  # an indented comment carries the last one on
            continue
        flush()
        pending = None
        if match is not None and match["code"].strip():
            pending = [match["code"].rstrip(), match["comment"]]
        elif match is not None:
            out.extend(f"# {part}".rstrip()
                       for part in textwrap.wrap(match["comment"], width - 2) or [""])
        else:
            out.append(line)
    flush()
    return "\n".join(out) + "\n"


def _reference() -> None:
    st.subheader("The lesson file")
    st.markdown("A lesson is a plain text file in TOML: a title, then one `[[steps]]` table per "
                "step. Write numbers about the model as facts in braces, such as "
                "`{prev.share:.0%}`: the app fills them in from the run, so a lesson stays true "
                "for the model it names.")
    st.caption(limits_said())
    with open(EXAMPLE_FILE, encoding="utf-8") as f:
        st.code(comments_on_own_lines(f.read()), language="toml", wrap_lines=True)
    rows = [{"page": name, "settings a step may set": ", ".join(specs) or "—",
             "figure (the first unless set)": ", ".join(FIGURES.get(name, {})) or "the whole page"}
            for name, (_, _, specs) in PAGES.items()]
    with st.expander("Pages a step can open, and what it can set on each"):
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    facts = [{"fact": name, "fields": ", ".join(f.fields), "what": f.describe}
             for name, f in FACTS.items()]
    with st.expander("Facts a lesson can use"):
        st.dataframe(pd.DataFrame(facts), hide_index=True, width="stretch")


def render(selection) -> None:
    if st.session_state.pop("_teach_open", False):
        switch_to("lessons", query_params=dict(st.query_params))
    st.title("Teach with it", anchor=False)
    class_teach.render()  # a live class: join code, QR code, the teacher's link
    st.markdown("Lead a class through the app with a lesson of your own. Every lesson step has "
                "its own link, so you can send a whole room to the same view. **Projector "
                "mode** (bottom of the sidebar) makes text and figures larger.")
    _draft_editor()
    _open_file()
    _reference()
    st.subheader("Running it for a class")
    st.markdown("Start the app on one machine with `ATTENTION_LAB_HOSTED=1` and share its "
                "address. Put your lesson files in a folder and set `ATTENTION_LAB_LESSONS` to "
                "it: they appear on the Lessons page for everyone. The README says more.")

