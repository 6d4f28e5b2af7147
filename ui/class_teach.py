"""The Teach page's live class: start one, show its join code, join link and QR code (large in
projector mode), the teacher's own link only when the teacher asks for it (never by default:
the class watches this screen), and end it."""

from __future__ import annotations

import io

import streamlit as st

from teaching.class_store_base import TEACHER_AWAY_SECONDS

from . import class_session, projector

LINK_PARAM = "class"  # /teach?class=<teacher key>: the teacher link


def qr_png(text: str) -> bytes:
    """A QR code of `text` as PNG bytes (medium error correction: a projector's glare)."""
    import segno

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=12, border=3, dark="#000000",
                                     light="#ffffff")
    return out.getvalue()


def take_teacher_link() -> None:
    """/teach?class=<key>: this session leads that class. app.py calls it first thing in a run
    of the Teach page, so the key leaves the address bar before anything else of the run writes
    the address (a projector never shows it, and no later address holds it)."""
    key = st.query_params.get(LINK_PARAM)
    if key is None:
        return
    del st.query_params[LINK_PARAM]
    from teaching.class_store import ClassError

    try:
        m = class_session.lead(str(key)[:200])
    except ClassError as exc:
        st.session_state["_class_teach_error"] = str(exc)
        return
    if m is None:
        st.session_state["_class_teach_error"] = (
            "This teacher link belongs to a class that has ended or expired. Start a new "
            "class below.")
        return
    st.rerun()  # again from the top: the class bar (drawn before this page) and its poll


def _start() -> None:
    from teaching.class_store import ClassError

    try:
        class_session.start()
    except ClassError as exc:
        st.session_state["_class_teach_error"] = str(exc)


def _end() -> None:
    from teaching.class_store import ClassError

    try:
        class_session.end()
    except ClassError as exc:
        st.session_state["_class_teach_error"] = str(exc)


def _show_teacher_link(shown: bool) -> None:
    m = class_session.teacher()
    if m is not None:
        m.show_teacher_link = shown


def render() -> None:
    """The live class section of the Teach page."""
    problem = st.session_state.pop("_class_teach_error", None)
    if problem:
        st.error(problem)
    m = class_session.teacher()
    if m is None:
        st.subheader("A live class", anchor=False)
        _not_started()
        return
    _join_card(m)
    _teacher_link(m)
    st.button("End the class", key="class_end", icon=":material/stop_circle:", on_click=_end,
              help="Students' screens stop following yours and say that the class has ended.")


def _not_started() -> None:
    if class_session.student() is not None:
        st.info("This browser has joined a class as a student. Leave it (on the Join a class "
                "page) to start a class of your own here.")
        return
    st.markdown("Start a class and your students join with a short code or a QR code, no "
                "accounts. From then on their screens follow yours: the page, the text, the "
                "settings and the lesson step you open. On a question, you see the class's "
                "answers as they come in and reveal the answer to everyone at once.")
    st.button("Start a class", key="class_start", type="primary", icon=":material/groups:",
              on_click=_start)


def _join_card(m) -> None:
    base = class_session.server_address("teach")
    code = class_session.shown_code(m.join_code)
    link = class_session.join_link(m.join_code, base) if code else ""
    with st.container(border=True):
        qr, words = st.columns([2, 3] if projector.on() else [1, 3])
        if link:
            qr.image(qr_png(link), width="stretch", caption="Scan to join")
        words.markdown("**Join the class:** scan the code, or open the page *Join a class* "
                       "and type")
        if code:
            words.title(code, anchor=False)
        else:
            words.markdown("the code shown when the class was started (this teacher link "
                           "opened the class without it).")
        if link:
            words.caption("or open this link:")
            words.code(link, language=None, wrap_lines=True)
        words.caption("The bar at the top of every page counts who follows you, live.")


NOT_ON_SCREEN = ("Whoever has your teacher link leads this class: they can move everyone's "
                 "screen, reveal answers, show names and end it. Never show it on the projector "
                 "or share your screen with it; open it where only you see it.")


def _teacher_link(m) -> None:
    """The teacher's own link, drawn only after the teacher asks (and hidden again)."""
    with st.container(border=True):
        st.markdown("**Your teacher link** leads this class again from another computer, or "
                    f"from this one after its tab has been closed for over "
                    f"{_minutes(TEACHER_AWAY_SECONDS)}.")
        st.caption(NOT_ON_SCREEN)
        if not m.show_teacher_link:
            st.button("Show my teacher link", key="class_show_teacher_link",
                      icon=":material/key:", on_click=_show_teacher_link, args=(True,))
            return
        st.code(class_session.teacher_link(m.teacher_key,
                                           class_session.server_address("teach")),
                language=None, wrap_lines=True)
        st.button("Hide it", key="class_hide_teacher_link", on_click=_show_teacher_link,
                  args=(False,))


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"
