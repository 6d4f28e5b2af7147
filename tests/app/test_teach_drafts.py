"""The Teach page's draft lesson is kept on the server per browser: a reload finds it, another
browser does not, the store is bounded, and a recorded step never holds a server path."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from page_links import open_page, switch  # noqa: E402

from teaching.draft import to_toml  # noqa: E402
from server import drafts, sessions  # noqa: E402


@pytest.fixture
def browser(monkeypatch):
    """Which browser the next AppTest session belongs to (its cookie, as browser_id reads it)."""
    drafts.forget_all()
    who = {"id": "browser-1"}
    monkeypatch.setattr(sessions, "browser_id", lambda: who["id"])
    yield who
    drafts.forget_all()


def test_a_reload_keeps_the_draft_and_another_browser_has_its_own(browser):
    at = open_page("heads", "tiny-induction", "abcabc")
    at.button(key="teach_record").click().run()
    assert "Draft lesson: 1 step" in " ".join(c.value for c in at.sidebar.caption)
    again = open_page("teach", "minilm")  # a reload: a new session, same browser
    titles = [e.label for e in again.expander]
    assert any(t.startswith("Step 1: Head statistics · tiny-induction") for t in titles), titles
    browser["id"] = "browser-2"
    other = open_page("teach", "minilm")
    assert not any(e.label.startswith("Step 1") for e in other.expander)
    assert any("Record this view as a step" in i.value for i in other.info)


def test_the_drafts_kept_are_bounded(monkeypatch):
    drafts.forget_all()
    monkeypatch.setattr(drafts, "MAX_DRAFTS", 2)
    for name in ("a", "b", "c"):
        drafts.draft_for(name)["title"] = name
    assert drafts.draft_for("c")["title"] == "c" and drafts.draft_for("b")["title"] == "b"
    assert drafts.draft_for("a")["title"] == ""  # the least recently used went first
    big = {"text": "x" * (drafts.MAX_DRAFT_BYTES * 3 // 4)}
    assert drafts.room_for(drafts.empty(), big)
    assert not drafts.room_for({"steps": [big]}, big)  # two no longer fit one lesson file
    drafts.forget_all()


def test_a_trained_model_is_recorded_by_its_label_never_its_folder(browser):
    folder = str(ROOT / "weights" / "tiny-induction")  # stands for the server's temp folder
    at = open_page("attention", "minilm", "abcabc")
    at.session_state["trained_models"] = {"trained: induction": folder}
    at.run()  # the sidebar now offers it
    at.selectbox(key="sb_model_choice").set_value("trained: induction").run()
    assert not at.exception
    assert at.session_state["selection"].model_name == folder  # what runs is the folder
    at.button(key="teach_record").click().run()
    step = at.session_state["lesson_draft"]["steps"][-1]
    assert step["model"] == "trained: induction"
    text = to_toml("Mine", "", [step])
    assert folder not in text and "weights" not in text
    assert 'model = "trained: induction"' in text


def test_send_a_class_gives_a_view_link_that_opens_in_any_browser(browser):
    from urllib.parse import parse_qsl, urlsplit

    from page_links import open_view, shown_view
    from ui.view_state import ViewState

    recorded = ViewState("attention", "tiny-induction", "abcdefabcdef", "",
                         {"layer": 1, "head": 2}).normal()
    at = open_view(recorded)
    at.button(key="teach_record").click().run()
    switch(at, "teach").run()
    at.button(key="teach_try").click().run()  # "Try it now": the draft as an uploaded lesson
    assert not at.exception, [e.value for e in at.exception]
    links = [c.value for c in at.code if "/attention?" in c.value]
    assert len(links) == 1, [c.value for c in at.code]
    assert "lesson=" not in links[0]  # an uploaded lesson is in this browser only
    parts = urlsplit(links[0])
    sent = ViewState.from_link(parts.path.strip("/"), dict(parse_qsl(parts.query)))
    assert sent == recorded
    browser["id"] = "a student's browser"
    assert shown_view(open_view(sent), "attention") == recorded
