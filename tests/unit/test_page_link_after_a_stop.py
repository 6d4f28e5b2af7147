"""A page's link after its run (ui/view_state.PageView.write_link): the settings the page used
go in and the others come out; when the page stopped early (a message, a wait for room), a
setting it had not reached yet keeps what the link says, so the run after the wait opens the
view the link asked for (a T5 link in projector mode once came back on "All heads")."""

from __future__ import annotations

import pytest

from ui import view_state


@pytest.fixture
def written(monkeypatch):
    got = {}
    state = {view_state.USED_KEY: {"attention": {"layer", "head"}},
             "attn_layer": 1, "attn_head": 0, "attn_view": "Why this score"}
    monkeypatch.setattr(view_state.st, "session_state", state)
    monkeypatch.setattr(view_state, "write_to_url", lambda **values: got.update(values))
    return got


def test_a_finished_run_takes_out_what_the_page_did_not_use(written):
    view_state.page_view("attention").write_link()
    assert written["layer"] == "1" and written["head"] == "0"
    assert "view" in written and written["view"] is None  # the page did not draw it


def test_a_stopped_run_leaves_the_settings_it_did_not_reach(written):
    view_state.page_view("attention").write_link(stopped=True)
    assert written["layer"] == "1" and written["head"] == "0"
    assert "view" not in written and "cq" not in written  # the link keeps its own
