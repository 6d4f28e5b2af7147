"""A model the teacher trained in their own session, in a live class (AppTest sessions sharing
a real SQLite store): the class's view says the model was trained there, and a student's
screen shows the same page with the app's own small model of the same task, with one plain
sentence saying so: no error, no traceback, no other model shown under the teacher's label.
Locally and in hosted mode (where only allowlisted models load)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import APP, page_text, switch  # noqa: E402
from test_live_class import _clean, bar, join, store  # noqa: E402, F401  (store: a fixture)

pytestmark = pytest.mark.app

LABEL = "trained: induction"  # how the training page names a model it trained
WEIGHTS = Path(__file__).resolve().parents[2] / "weights" / "tiny-induction"


def teacher_with_trained_model(store, folder: Path):
    """A teacher who trained a model in this session (its folder, as the training page keeps
    it) and shows it on the Attention page."""
    from ui.class_session import Membership

    new = store.start_class()
    teacher = AppTest.from_file(APP, default_timeout=300)
    teacher.session_state["_class"] = Membership("teacher", new.class_id,
                                                 join_code=new.join_code,
                                                 teacher_key=new.teacher_key)
    teacher.session_state["trained_models"] = {LABEL: str(folder)}
    teacher.session_state["sb_model_choice"] = LABEL
    teacher.session_state["sb_text"] = "a b c d a b c"
    switch(teacher, "attention")
    _clean(teacher.run())
    return teacher, new


@pytest.mark.parametrize("hosted", [False, True])
def test_a_student_sees_the_same_view_with_a_model_they_can_open_and_is_told(
        store, tmp_path, monkeypatch, hosted):
    if hosted:
        monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    folder = tmp_path / "run"
    shutil.copytree(WEIGHTS, folder)
    teacher, new = teacher_with_trained_model(store, folder)
    assert "Could not load" not in page_text(teacher, ("error",))  # the teacher's own view
    link = store.view(new.class_id).link
    assert link.startswith("/attention?model=trained%3A+induction") and "trained=1" in link
    assert str(folder) not in link  # the folder on the server never leaves the session
    student = join(new.join_code)
    _clean(student)
    assert [t.value for t in student.title] == ["Attention"]
    assert student.session_state["sb_model_choice"] == "tiny-induction"
    said = page_text(student, ("markdown", "info", "caption", "warning", "error"))
    assert ("The teacher's screen uses a model the teacher trained in their own browser, which "
            "this screen cannot open. You see the same view with tiny-induction, the app's own "
            "small model trained on the same task, instead.") in said
    assert not student.error and LABEL not in said
    assert "Following the teacher" in bar(student)
    switch(teacher, "heads").run()  # the teacher moves on; the sentence stays with that view
    teacher.session_state["sb_model_choice"] = "minilm"
    _clean(teacher.run())
    from test_live_class import poll

    poll(student)
    assert student.session_state["sb_model_choice"] == "minilm"
    assert "cannot open" not in page_text(student, ("info",))
