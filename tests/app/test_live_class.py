"""A live class in two AppTest sessions that share a real SQLite store: the teacher starts a
class (a code, a join link, a QR code, a teacher link), a student joins by code and, after its
poll, shows the teacher's page and settings; looking around and following again; the
teacher's headcount; a bad, an ended and a guessed code; the teacher link; a student cannot
change the class's view."""

from __future__ import annotations

import os
import re

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import APP, page_text, shown_view, switch  # noqa: E402

pytestmark = pytest.mark.app

CODE = re.compile(r"[A-Z0-9]{3}-[A-Z0-9]{3}")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh SQLite class store for this test, as the app opens it."""
    url = f"sqlite:///{tmp_path / 'classes.sqlite'}"
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", url)
    from teaching.class_store import open_store

    return open_store(url)


def _clean(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def start_class() -> tuple[AppTest, object]:
    """A teacher's session on the Teach page with a class started: (session, membership)."""
    teacher = AppTest.from_file(APP, default_timeout=300).run()
    switch(teacher, "teach").run()
    _clean(teacher.button(key="class_start").click().run())
    return teacher, teacher.session_state["_class"]


def join(code: str, name: str = "") -> AppTest:
    student = AppTest.from_file(APP, default_timeout=300)
    student.query_params["code"] = code
    student.run()
    switch(student, "join").run()
    if name:
        student.text_input(key="class_name").input(name)
    _clean(student.button(key="class_join").click().run())
    return switch(student, student.session_state.get("_class_page", "join"))


def poll(student: AppTest) -> AppTest:
    """The student's poll found a new view and reran the app. A browser's address names the
    page its last run ended on (the page a switch opened), and its next runs stay there; an
    AppTest reruns the page it was last pointed at, so it is pointed at that page before and
    after the run."""
    switch(student, student.session_state.get("_class_page", "join"))
    _clean(student.run())
    return switch(student, student.session_state["_class_page"])


def bar(at: AppTest) -> str:
    return page_text(at, ("markdown",))


def test_the_teacher_gets_a_code_a_join_link_a_qr_code_and_a_teacher_link_on_asking(store):
    teacher, m = start_class()
    code = next(t.value for t in teacher.title if CODE.fullmatch(t.value))
    assert store.class_by_code(code) == m.class_id
    boxes = [c.value for c in teacher.code]
    assert f"/join?code={code}" in boxes
    assert not any(m.teacher_key in b for b in boxes)  # the class watches this screen
    assert "Never show it on the projector" in page_text(teacher, ("caption",))
    images = teacher.get("image")
    assert [img.captions for img in images] == [["Scan to join"]]
    assert "0 following · 0 looking around · 0 joined" in bar(teacher)
    teacher.button(key="class_show_teacher_link").click().run()  # the teacher asks for it
    assert f"/teach?class={m.teacher_key}" in [c.value for c in teacher.code]
    teacher.button(key="class_hide_teacher_link").click().run()
    assert not any(m.teacher_key in c.value for c in teacher.code)


def test_a_student_joins_and_shows_the_teachers_view_after_its_poll(store):
    teacher, m = start_class()
    student = join(m.join_code.lower(), "Ann")  # any case, without the dash
    assert "Following the teacher" in bar(student)
    assert student.session_state["_class"].name == "Ann"
    switch(teacher, "attention").run()
    teacher.slider(key="attn_layer").set_value(2).run()
    _clean(teacher.slider(key="attn_head").set_value(5).run())
    wanted = shown_view(teacher, "attention")
    assert wanted.settings["layer"] == 2 and wanted.settings["head"] == 5
    poll(student)
    assert [t.value for t in student.title] == ["Attention"]
    assert shown_view(student, "attention") == wanted
    assert "1 following · 0 looking around · 1 joined" in bar(teacher.run())


def test_look_around_then_follow_again(store):
    teacher, m = start_class()
    student = join(m.join_code)
    switch(teacher, "attention").run()
    poll(student)
    student.button(key="class_look").click().run()
    assert "Looking around on your own" in bar(student)
    assert "0 following · 1 looking around · 1 joined" in bar(teacher.run())
    teacher.slider(key="attn_head").set_value(7).run()
    switch(teacher, "heads").run()
    poll(student)
    assert [t.value for t in student.title] == ["Attention"]  # stays where it was
    assert student.session_state["attn_head"] != 7
    student.button(key="class_follow").click().run()
    poll(student)
    assert "Following the teacher" in bar(student)
    assert shown_view(student, "heads") == shown_view(teacher, "heads")


def test_a_student_cannot_change_the_class_view(store):
    from teaching.class_store import NotTeacher
    from ui import class_follow

    teacher, m = start_class()
    switch(teacher, "attention").run()
    version = store.view(m.class_id).version
    student = join(m.join_code)
    poll(student)
    student.slider(key="attn_layer").set_value(3).run()
    switch(student, "heads").run()
    assert store.view(m.class_id).version == version
    assert store.view(m.class_id).link.startswith("/attention?")
    member = student.session_state["_class"]
    assert member.teacher_key == "" and not hasattr(class_follow, "set_view")
    with pytest.raises(NotTeacher):
        store.set_view(member.member_key, "/heads?model=minilm")


@pytest.mark.parametrize("code", ["", "QQQ-QQQ", "<b>x</b>"])
def test_a_bad_code_says_so(store, code):
    student = join(code)
    said = " ".join(e.value for e in student.error)
    assert ("Type the class code" in said) if not code else ("class" in said and "code" in said)
    assert code or "six letters and digits" in said  # codes have digits: 3AT-BGK
    assert "_class" not in student.session_state


def test_an_ended_class_tells_its_students_and_takes_no_one_new(store):
    teacher, m = start_class()
    student = join(m.join_code)
    teacher.button(key="class_end").click().run()
    assert "_class" not in teacher.session_state
    poll(student)
    assert "The class has ended" in page_text(student, ("warning",))
    late = join(m.join_code)
    assert late.error and "_class" not in late.session_state


def test_the_teacher_link_leads_the_class_and_leaves_the_address_bar(store):
    _, m = start_class()
    again = AppTest.from_file(APP, default_timeout=300)
    again.query_params["class"] = m.teacher_key
    switch(again, "teach")
    _clean(again.run())
    assert again.session_state["_class"].class_id == m.class_id
    assert "class" not in again.query_params
    assert "joined" in bar(again)
    code = f"{m.join_code[:3]}-{m.join_code[3:]}"
    assert code in [t.value for t in again.title]  # the code on this machine's screen too
    stale = AppTest.from_file(APP, default_timeout=300)
    stale.query_params["class"] = "not-a-key"
    switch(stale, "teach")
    _clean(stale.run())
    assert "ended or expired" in " ".join(e.value for e in stale.error)
    assert "_class" not in stale.session_state


def test_a_name_with_markup_is_shown_as_plain_text_and_the_student_waits_for_a_page(store):
    _, m = start_class()  # the teacher stays on the Teach page: nothing to follow yet
    name = "<script>alert(1)</script> **Bo**"
    student = join(m.join_code, name)
    assert [t.value for t in student.title] == ["Join a class"]
    assert "Waiting for the teacher to open a page" in page_text(student, ("info",))
    assert [t.value for t in student.text] == [name]  # st.text: never Markdown or HTML
    assert name not in page_text(student, ("markdown", "success"), unescape=False)
