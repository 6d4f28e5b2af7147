"""Join a class: type the code the teacher shows (or come with /join?code=ABC-DEF) and an
optional name; from then on this screen follows the teacher's (ui/class_follow.py)."""

from __future__ import annotations

import streamlit as st

from ui import class_session

CODE_KEY, NAME_KEY, JOIN_KEY = "class_code", "class_name", "class_join"
ERROR_KEY = "_class_join_error"
MAX_CODE_CHARS, MAX_NAME_CHARS = 20, 40


def _join() -> None:
    from teaching.class_store import ClassError

    code = str(st.session_state.get(CODE_KEY, "")).strip()
    name = str(st.session_state.get(NAME_KEY, "")).strip()
    if not code:
        st.session_state[ERROR_KEY] = "Type the class code first: six letters and digits, like ABC-234."
        return
    try:
        class_session.join(code, name)
    except ClassError as exc:
        st.session_state[ERROR_KEY] = str(exc)


def _in_class(m) -> None:
    from teaching.class_store import ClassError

    st.success("You are in the class" + (" as " if m.name else "."))
    if m.name:
        st.text(m.name)  # a name is plain text, never Markdown
    try:
        view = class_session.store().view(m.class_id)
    except ClassError:
        view = None
    if view is None or view.ended or m.ended:
        st.warning("This class has ended. You can keep exploring the app on your own.")
    elif not view.link:
        st.info("Waiting for the teacher to open a page. Your screen will follow on its own.")
    else:
        st.markdown("Your screen follows the teacher's. The bar at the top of every page says "
                    "so, and lets you look around on your own.")
    st.button("Leave the class", key="class_leave", on_click=class_session.leave)


def render(selection) -> None:
    st.title("Join a class", anchor=False)
    m = class_session.current()
    if m is not None and not m.teacher:
        _in_class(m)
        return
    if m is not None:
        st.info("You lead a class in this browser. To try the student's side, open the join "
                "link in a private window or on another device.")
        return
    st.markdown("Your teacher shows a code on the screen. Type it here and your screen will "
                "follow the teacher's: the same page, text and settings. You can look around "
                "on your own at any time. No account is needed.")
    given = st.query_params.get("code")
    if given and CODE_KEY not in st.session_state:
        st.session_state[CODE_KEY] = class_session.shown_code(str(given)[:MAX_CODE_CHARS])
    st.text_input("Class code", key=CODE_KEY, max_chars=MAX_CODE_CHARS,
                  placeholder="ABC-DEF")
    st.text_input("Your name (optional)", key=NAME_KEY, max_chars=MAX_NAME_CHARS,
                  help="The teacher sees names only if they choose to show them. Leave it "
                  "empty to stay anonymous.")
    st.button("Join", key=JOIN_KEY, type="primary", icon=":material/login:", on_click=_join)
    problem = st.session_state.pop(ERROR_KEY, None)
    if problem:
        st.error(problem)
