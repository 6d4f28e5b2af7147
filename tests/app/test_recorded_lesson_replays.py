"""A lesson recorded with "Record this view as a step", one step on every page, downloaded as
a lesson file and opened from a lessons folder, replays each step to the view it recorded: a
step's one figure in that view, and its "Open the full page" link to exactly that view."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from page_links import open_lesson, open_view, shown_view
from test_view_links import LESSON_PAGES, view_of

from teaching.draft import to_toml
from teaching.figures import figure_of
from teaching.format import parse_lesson
from ui.view_state import ViewState

MODEL = {"logit-lens": "tiny-induction", "generate": "tiny-chars", "attribution": "tiny-chars",
         "patching": "tiny-induction", "attention": "tiny-reverse"}  # else MiniLM


def _recorded(page: str) -> dict:
    at = open_view(view_of(page, MODEL.get(page, "minilm")).normal())
    at.button(key="teach_record").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state["lesson_draft"]["steps"][-1]


def test_a_recorded_lesson_replays_every_page_to_the_view_it_recorded(tmp_path, monkeypatch):
    steps = [_recorded(page) for page in LESSON_PAGES]
    steps[0]["explain"] = "Look at the diagonal."  # one written by the teacher, the rest empty
    text = to_toml("Replay", "", steps)
    assert "What to notice here." not in text and "/tmp" not in text
    assert text.count("explain =") == 1
    lesson = parse_lesson(text.encode(), "replay", "folder")
    assert [step.page for step in lesson.steps] == LESSON_PAGES
    folder = tmp_path / "lessons"
    folder.mkdir()
    (folder / "replay.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(folder))
    for number, step in enumerate(steps, 1):
        at = open_lesson("replay", number)
        assert not at.exception, (number, [e.value for e in at.exception])
        wanted = ViewState(step["page"], step["model"], step["text"], step["pair"],
                           step["settings"]).normal()
        shown = shown_view(at, step["page"])
        if not figure_of(step["page"]):  # a page with no figure of its own runs whole
            assert shown == wanted, number
            continue
        # the step's one figure draws with the recorded settings it uses, and "Open the full
        # page" opens exactly the recorded view
        assert (shown.model, shown.text, shown.pair) == (wanted.model, wanted.text, wanted.pair)
        assert all(wanted.settings.get(k) == v for k, v in shown.settings.items()), number
        url = next(b.proto.url for b in at.get("link_button") if "full page" in b.label)
        parts = urlsplit(url)
        assert ViewState.from_link(parts.path.strip("/"), dict(parse_qsl(parts.query))) \
            == wanted, number
