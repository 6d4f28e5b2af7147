"""AppTest: hostile lesson files uploaded on the Teach page get a message naming the line, never
an exception; the upload box, its help and the README state the same size limit; a lesson whose
"cell" question asks about a word the text lacks says so when it is started.

The files here are small versions of the hostile ones (tests/unit/test_lesson_file_limits.py
parses the full-size ones in a child process under a memory limit), so that a regression fails
these tests without taking the machine down."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from teaching.limits import MAX_KEY_PARTS, MAX_LESSON_BYTES  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
HEAD = 'title = "Hostile"\nmodel = "minilm"\ntext = "The cat sat on the mat."\n'
STEP = '\n[[steps]]\ntitle = "One"\npage = "attention"\nexplain = "Look."\n'
CELL = ('\n[steps.question]\nkind = "cell"\nprompt = "Which key?"\nrow = "dog"\n'
        'reveal = "It looks at {cell.brightest}."\n')


def _teach() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    switch(at, "teach").run()
    assert not at.exception, at.exception
    return at


def _upload(at: AppTest, source: str) -> AppTest:
    box = next(w for w in at.file_uploader if w.key == "teach_upload")
    box.set_value(("hostile.toml", source.encode("utf-8"), "application/toml")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _said(at: AppTest, kind: str) -> str:
    return " ".join(str(el.value) for el in at.get(kind)).replace("\\", "")


@pytest.mark.parametrize("source, line, words", [
    (HEAD + "a" + ".a" * 2_000 + " = 1\n" + STEP, 4, f"at most {MAX_KEY_PARTS} parts"),
    (HEAD + STEP + "x = " + "[" * 400 + "]" * 400 + "\n", 9, "nested more than"),
    (HEAD + STEP + "x = " + "{a=" * 400 + "1" + "}" * 400 + "\n", 9, "nested more than"),
    (HEAD + STEP.replace('"Look."', '"' + "{prev.share:99999999} " * 10 + '"'), 8,
     "never a width"),
    (HEAD + STEP.replace('"Look."', '"{run.model:_>9999999}"'), 8, "never a width"),
], ids=["dotted-key", "nested-lists", "nested-tables", "width-format", "fill-format"])
def test_a_hostile_upload_is_a_message_naming_the_line(source, line, words):
    at = _upload(_teach(), source)
    errors = _said(at, "error")
    assert f"problem on line {line}:" in errors and words in errors, errors
    assert not at.get("success") and "lesson_uploads" not in at.session_state


def test_the_upload_box_its_help_and_the_readme_give_the_same_size_limit():
    at = _teach()
    box = next(w for w in at.file_uploader if w.key == "teach_upload")
    megabytes = MAX_LESSON_BYTES // 1_000_000
    assert MAX_LESSON_BYTES == megabytes * 1_000_000
    assert box.proto.max_upload_size_mb == megabytes  # the box shows "Limit 1MB per file"
    assert f"At most {megabytes} MB." in box.help
    readme = (ROOT / "README.md").read_text()
    assert f"a file over **{megabytes} MB** ({MAX_LESSON_BYTES:,} bytes" in readme
    assert "200 kB" not in readme
    assert f"at most {megabytes} MB" in _said(at, "caption")  # the format help says it too


def test_a_cell_question_about_a_word_the_text_lacks_says_so_when_started():
    at = _upload(_teach(), HEAD + STEP + CELL)
    assert "Opened “Hostile”" in _said(at, "success"), _said(at, "error")
    at.button(key="teach_start_upload").click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = _said(at, "error")
    assert "cannot be shown" in errors and "row of “dog”" in errors, errors
    assert "line 5:" in errors


@pytest.mark.parametrize("steps, said", [(1, "(1 step)."), (2, "(2 steps).")])
def test_an_opened_lesson_counts_its_steps_in_words(steps, said):
    at = _upload(_teach(), HEAD + STEP * steps)
    assert f"Opened “Hostile” {said}" in _said(at, "success"), _said(at, "error")
