"""The lesson file format: good files parse, broken ones name the line and the problem, and
hostile Markdown stays inert."""

from __future__ import annotations

from pathlib import Path

import pytest

from teaching.draft import to_toml
from teaching.format import (
    MAX_LESSON_BYTES, LessonError, ModelShape, check_models, parse_lesson,
)
from teaching.render import fill, safe_markdown

pytestmark = pytest.mark.unit

TEACHING = Path(__file__).resolve().parents[2] / "teaching"
GOOD = '''title = "A lesson"
model = "minilm"
text = "The cat sat."

[[steps]]
title = "One"
page = "attention"
layer = 1
head = "{prev.head}"
explain = "Look at {prev.share:.0%}."

[steps.question]
kind = "choice"
prompt = "Which?"
options = ["a", "b"]
answer = "a"

[[steps]]
title = "Two"
page = "walkthrough"
step = 3
text = "Another text."
explain = "Second."
'''


def _error(source: str | bytes) -> LessonError:
    with pytest.raises(LessonError) as caught:
        parse_lesson(source, "x")
    return caught.value


def test_a_good_lesson_parses_with_defaults_and_overrides():
    lesson = parse_lesson(GOOD, "my-lesson")
    assert lesson.id == "my-lesson" and lesson.title == "A lesson"
    one, two = lesson.steps
    assert one.settings == {"layer": 1, "head": "{prev.head}"}
    assert one.question.options == ("a", "b") and one.question.answer == "a"
    assert one.model == "minilm" and one.text == "The cat sat."
    assert two.text == "Another text." and two.settings == {"step": 3}
    assert one.line == 5 and two.line == 18


@pytest.mark.parametrize("path", sorted((TEACHING / "bundled").glob("*.toml"))
                         + [TEACHING / "example_lesson.toml"], ids=lambda p: p.stem)
def test_shipped_lesson_files_parse(path):
    lesson = parse_lesson(path.read_bytes(), path.stem)
    assert lesson.steps and lesson.title


@pytest.mark.parametrize("change, line, words", [
    (("page = \"walkthrough\"", "page = \"walkthru\""), 20, "unknown page 'walkthru'"),
    (("layer = 1", "layer = \"one\""), 8, "layer must be a whole number"),
    (("layer = 1", "layer = -2"), 8, "at least 0"),
    (("layer = 1", "colour = 1"), 8, "unknown key “colour”"),
    (("kind = \"choice\"", "kind = \"essay\""), 13, "question kind"),
    (("answer = \"a\"", "answer = \"c\""), 16, "not one of the options"),
    (("{prev.share:.0%}", "{nope.share}"), 10, "no fact called “nope”"),
    (("{prev.share:.0%}", "{prev.colour}"), 10, "the fact “prev” has"),
    (("options = [\"a\", \"b\"]", "options = [\"a\"]"), 15, "2 to 8 answers"),
    (("explain = \"Second.\"", "explain = 5"), 23, "explain must be a piece of text"),
])
def test_a_broken_lesson_names_the_line_and_the_problem(change, line, words):
    error = _error(GOOD.replace(*change))
    assert words in error.problem, error.problem
    assert error.line == line, (error.line, error.problem)
    assert str(error).startswith(f"line {line}:")


def test_bad_toml_syntax_names_its_line():
    error = _error(GOOD.replace('title = "Two"', 'title = "Two'))
    assert error.line == 19 and "not valid TOML" in error.problem


def test_a_lesson_needs_steps_and_a_title():
    assert "at least one [[steps]]" in _error('title = "x"\n').problem
    assert "title must be" in _error(GOOD.replace('title = "A lesson"\n', "")).problem


def test_oversized_and_non_utf8_files_are_refused_with_the_numbers():
    big = GOOD + "# " + "x" * MAX_LESSON_BYTES + "\n"
    error = _error(big.encode())
    assert f"{len(big.encode()):,} bytes" in error.problem
    assert f"{MAX_LESSON_BYTES:,}" in error.problem
    assert "not UTF-8" in _error(b"title = \"\xff\xfe\"").problem


def test_model_checks_range_and_allowlist():
    lesson = parse_lesson(GOOD.replace("layer = 1", "layer = 6"), "x")
    shapes = {"minilm": ModelShape(6, 12)}

    def shape_of(name):
        if name not in shapes:
            raise ValueError("no such model")
        return shapes[name]

    with pytest.raises(LessonError, match="layer 6 is out of range: minilm has layers 0 to 5"):
        check_models(lesson, shape_of)
    ok = parse_lesson(GOOD, "x")
    check_models(ok, shape_of)  # in range: no error
    with pytest.raises(LessonError, match="not on this server's list"):
        check_models(ok, shape_of, allowed=["tiny-chars"])
    with pytest.raises(LessonError, match="does not load: no such model"):
        check_models(parse_lesson(GOOD.replace('"minilm"', '"gpt-9"'), "x"), shape_of)


@pytest.mark.parametrize("hostile, kept, gone", [
    ("<script>alert(1)</script>", "&lt;script>", "<script"),
    ("[click](javascript:alert(1))", "[click]", "javascript:"),
    ("[x](JaVaScRiPt:alert(1))", "[x]", "JaVaScRiPt:"),
    ("![img](data:image/png;base64,AAAA)", "[img]", "data:"),
    ("[far](//evil.example/x)", "[far]", "//evil"),
    ("<img src=x onerror=alert(1)>", "&lt;img", "<img"),
])
def test_hostile_markdown_is_inert(hostile, kept, gone):
    safe = safe_markdown(f"Before {hostile} after")
    assert kept in safe and gone not in safe
    assert safe.startswith("Before") and safe.endswith("after")


def test_safe_links_stay_links():
    text = "[paper](https://arxiv.org/abs/1706.03762) and [page](/attention?layer=2)"
    assert safe_markdown(text) == text


def test_a_hostile_lesson_file_parses_but_renders_inert():
    source = GOOD.replace('explain = "Look at {prev.share:.0%}."',
                          'explain = "<script>x</script> [a](javascript:alert(1))"')
    step = parse_lesson(source, "x").steps[0]
    shown = safe_markdown(step.explain)
    assert "<script" not in shown and "javascript:" not in shown


def test_facts_fill_only_their_placeholders():
    facts = {"prev": {"share": 0.8312, "head": 7}, "run": {"vocab": 30522}}
    assert fill("{prev.share:.0%} at {prev.head}, {run.vocab:,}", facts) == "83% at 7, 30,522"
    assert fill(r"$\sqrt{d}$ and {x} stay", facts) == r"$\sqrt{d}$ and {x} stay"
    # no attribute access or other format tricks: only {fact.field[:spec]} is a placeholder
    assert fill("{prev.share.__class__}", facts) == "{prev.share.__class__}"


def test_a_recorded_draft_is_a_valid_lesson_file():
    steps = [{"page": "attention", "title": "Look \"here\"", "explain": "Line one\nline two",
              "model": "minilm", "text": "A \\ backslash and “quotes”.", "pair": "",
              "settings": {"layer": 2, "head": 5, "average": False, "view": "All heads"},
              "question": {"kind": "choice", "prompt": "Which?", "options": ["x", "y"],
                           "answer": "x", "reveal": "Because."}},
             {"page": "training", "title": "Train", "explain": "", "model": "tiny-chars",
              "text": "abc", "pair": "", "settings": {"task": "induction"}}]
    lesson = parse_lesson(to_toml("My lesson", "", steps), "draft")
    one, two = lesson.steps
    assert one.title == 'Look "here"' and one.text == "A \\ backslash and “quotes”."
    assert one.settings == {"layer": 2, "head": 5, "average": False, "view": "All heads"}
    assert one.question.answer == "x" and one.explain == "Line one\nline two"
    assert two.settings == {"task": "induction"}
    assert two.explain == ""  # none written: none invented (no "What to notice here.")
