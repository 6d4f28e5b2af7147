"""A model trained in the teacher's own session, in the class's link (ui/class_models.py): the
teacher's link says so only for such a model; a student's link parameters get the bundled model
of the same task (else the default), even when the student trained a model under the same
label (that is another model)."""

from __future__ import annotations

import pytest
import streamlit as st

from ui import class_models
from ui.class_session import Membership
from ui.view_state import TRAINED_KEY, ViewState


@pytest.fixture(autouse=True)
def clean():
    st.session_state.clear()
    yield
    st.session_state.clear()


def test_the_teachers_link_is_flagged_only_for_a_model_trained_in_the_session():
    view = ViewState("attention", "trained: chars", "hello")
    assert "trained=1" not in class_models.shared_link(view)  # not trained here: a name
    st.session_state[TRAINED_KEY] = {"trained: chars": "/tmp/run-1"}
    link = class_models.shared_link(view)
    assert link.endswith("&trained=1") and "/tmp/run-1" not in link
    assert "trained=1" not in class_models.shared_link(ViewState("attention", "minilm", "hi"))


@pytest.mark.parametrize("label, instead", [("trained: chars", "tiny-chars"),
                                            ("trained: reverse", "tiny-reverse"),
                                            ("trained: something new", "minilm"),
                                            ("<b>x</b>", "minilm")])
def test_a_student_gets_a_model_it_can_open(label, instead):
    m = Membership("student", "c", member_key="k")
    params = class_models.openable({"model": label, "text": "abc", "trained": "1"}, m)
    assert params["model"] == instead and params["text"] == "abc" and m.instead == instead
    said = class_models.sentence(m.instead)
    assert "trained in their own browser" in said and label not in said


def test_an_unflagged_link_is_kept_and_the_students_own_model_is_never_the_teachers():
    m = Membership("student", "c", member_key="k", instead="tiny-chars")
    params = {"model": "trained: chars", "trained": "0"}
    assert class_models.openable(params, m) == params and m.instead == ""
    st.session_state[TRAINED_KEY] = {"trained: chars": "/tmp/mine"}  # another model, same label
    flagged = {"model": "trained: chars", "trained": "1"}
    assert class_models.openable(flagged, m)["model"] == "tiny-chars"
