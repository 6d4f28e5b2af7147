"""AppTest: a lesson step whose figure takes long on its text (every head removed, every cell
patched) shows only its page's cost line and the one button that starts the work, and draws the
figure on the click."""

from __future__ import annotations

import pytest

from test_lessons import _open, _said

pytestmark = pytest.mark.app


LONG_ABLATION_LESSON = """
title = "Every head, on a long text"
model = "minilm"
text = "{text}"

[[steps]]
title = "Remove each head"
page = "ablation"
explain = "Each head removed alone."
"""


def test_an_ablation_step_on_a_long_text_waits_for_its_one_button(tmp_path, monkeypatch):
    """Past the size measured at once, the step's figure is the page's button and its cost
    line, nothing else; the click draws the grid."""
    text = " ".join(["The cat chased the dog and then the dog chased the cat."] * 7)
    (tmp_path / "long.toml").write_text(LONG_ABLATION_LESSON.format(text=text))
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(tmp_path))
    at = _open("long")
    assert not at.exception, at.exception
    assert not at.get("plotly_chart") and not at.get("title")
    assert "Measuring every head takes" in _said(at, "caption")
    button = at.button(key="abl_sweep_btn")
    assert button.label.startswith("Measure all 72 heads")
    button.click().run()
    assert not at.exception, at.exception
    assert {c.key for c in at.get("plotly_chart")} == {"abl_grid"}


HEAVY_PATCHING_LESSON = """
title = "Patching a long text"
model = "minilm"
text = "{text}"

[[steps]]
title = "Every cell"
page = "patching"
mode = "prompts"
explain = "Patch every layer and position."
"""


def test_a_patching_step_on_a_long_text_asks_for_the_click_first(tmp_path, monkeypatch):
    """The step's figure keeps the page's rule: above its place only the cost and the button
    that starts the work, as the page says them, and no chart until the click."""
    text = " ".join(["The cat sat on the mat because it was warm."] * 8)
    (tmp_path / "heavy.toml").write_text(HEAVY_PATCHING_LESSON.replace("{text}", text))
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(tmp_path))
    at = _open("heavy")
    assert not at.exception, at.exception
    assert "Patching every cell takes" in _said(at, "caption")
    assert [b.key for b in at.main.get("button") if not b.key.startswith("lesson_")] == ["pt_run"]
    assert not at.get("plotly_chart") and not at.main.get("text_input")
    assert not at.main.get("selectbox") and not at.get("title")
