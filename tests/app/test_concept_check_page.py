"""AppTest: the concept check taken alone from the lessons page. Both forms walked with known
answers (some right, some wrong): each question answered once, no answer shown until the end,
and the learner's map says exactly which misconceptions held and which to revisit, each to
revisit linking the first course step that probes it. A broken check file is a message."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_lesson  # noqa: E402

from bundled_lessons import LESSONS, default_induction, run_text  # noqa: E402
from teaching import concept_check  # noqa: E402
from teaching.resolve import step_texts  # noqa: E402
from teaching.syllabus import misconceptions  # noqa: E402
from ui.lesson_step import shown_name  # noqa: E402

pytestmark = pytest.mark.app

FORMS = concept_check.load_forms()
PLANS = {"before": lambda n: n % 2 == 1,  # right on the odd questions
         "after": lambda n: n % 3 != 0}  # right but on every third


@pytest.fixture(scope="module")
def right_answers():
    """Each item's right answer, from the model; the app's training run put in its shared
    cache first (the same settings give the same run), so it is trained once here."""
    from ui.cache import _run_cache

    induction = default_induction()
    _run_cache().get_or_compute(("induction-run", "induction"), lambda: induction)
    return {form: [step_texts(step, run_text, lambda: induction, label=shown_name)[1]
                   for step in lesson.steps] for form, lesson in FORMS.items()}


def _said(at, kind: str) -> str:
    """The words of every element of a kind, Markdown escapes taken out."""
    return " ".join(str(el.value) for el in at.get(kind)).replace("\\", "")


def _address(at, **params) -> None:
    """The page at this address, in the same session (as a link typed in the tab does)."""
    at.query_params.clear()
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception


def _take(at, form: str, answers: list[dict]) -> None:
    for number, texts in enumerate(answers, 1):
        assert at.query_params["item"] in (str(number), [str(number)])
        box = at.radio(key=f"check_{form}_{number}")
        right = PLANS[form](number)
        pick = texts["answer"] if right else next(o for o in box.options if o != texts["answer"])
        box.set_value(pick).run()  # the answer button waits for a pick
        at.button(key="check_answer").click().run()
        assert not at.exception, at.exception
        assert not at.get("success") and "right" not in _said(at, "warning")  # nothing told


def _map_lines(at) -> dict[str, str]:
    """Misconception id -> its line on the map."""
    lines = [line.removeprefix("- ") for el in at.markdown
             for line in str(el.value).split("\n\n")]
    out = {}
    for tag, m in misconceptions().items():
        belief = m.belief[0].lower() + m.belief[1:]
        found = [line for line in lines if belief in line]
        assert len(found) == 1, (tag, found)
        out[tag] = found[0]
    return out


def _expected(form_answers: dict[str, dict[int, bool]]) -> dict[str, bool | None]:
    verdicts = {}
    for tag in misconceptions():
        for form in ("after", "before"):
            numbers = [n for n, s in enumerate(FORMS[form].steps, 1)
                       if s.question.misconception == tag]
            if form in form_answers:
                verdicts[tag] = all(form_answers[form][n] for n in numbers)
                break
        else:
            verdicts[tag] = None
    return verdicts


def _check_map(at, taken: dict[str, dict[int, bool]]) -> None:
    steps = concept_check.teaching_steps({lesson.id: lesson for lesson in LESSONS})
    lines = _map_lines(at)
    for tag, held in _expected(taken).items():
        line = lines[tag]
        lesson_id, number = steps[tag]
        link = f"(/lessons?lesson={lesson_id}&step={number})"
        if held:
            assert line.startswith("**Held**") and link not in line, line
        else:
            assert line.startswith("**Revisit**") and link in line, line
            assert f"step {number}]" in line  # the link names the lesson and its step
            assert "you thought that" in line


def test_both_forms_walked_with_known_answers_give_the_exact_map(right_answers):
    at = open_lesson()
    assert not at.exception, at.exception
    at.button(key="check_start_before").click().run()
    _take(at, "before", right_answers["before"])
    n = len(FORMS["before"].steps)
    before = {k: PLANS["before"](k) for k in range(1, n + 1)}
    assert at.query_params["item"] in (str(n + 1), [str(n + 1)])
    _check_map(at, {"before": before})
    assert "after: not taken yet" in _said(at, "markdown")

    _address(at, check="before", item="1")  # back to a question answered
    assert "answered once" in _said(at, "info")
    assert not [r for r in at.radio if r.key == "check_before_1"]  # no second answer

    at.query_params.clear()
    at.run()  # the list: the first check done, "Check again" waits for a finished lesson
    assert "check_start_before" not in [b.key for b in at.button]
    assert at.button(key="check_start_after").disabled

    _address(at, check="after", item="1")
    _take(at, "after", right_answers["after"])
    after = {k: PLANS["after"](k) for k in range(1, n + 1)}
    _check_map(at, {"before": before, "after": after})
    marks = _said(at, "markdown")
    assert "Before: ✓ right · after: ✗ not right" in marks  # question 3: moved the wrong way
    assert "Before: ✗ not right · after: ✓ right" in marks  # question 2: moved


def test_a_broken_check_file_is_a_message_not_a_traceback(tmp_path, monkeypatch):
    source = (concept_check.CHECKS / "before.toml").read_text()
    (tmp_path / "before.toml").write_text(source.replace("[[steps]]", "[[steps]\n", 1))
    (tmp_path / "after.toml").write_text((concept_check.CHECKS / "after.toml").read_text())
    monkeypatch.setattr(concept_check, "CHECKS", tmp_path)
    at = open_lesson(check="before", item="1")
    assert not at.exception, at.exception
    said = _said(at, "error")
    assert "The concept check cannot be opened: the first check: line" in said, said
    assert "not valid TOML" in said
    at.query_params.clear()
    at.run()  # the lessons are still listed, with the same message in the check's place
    assert not at.exception and "The concept check cannot be opened" in _said(at, "error")
    assert at.subheader, "the course's units are still listed"
