"""AppTest: the lesson figures of the effect, compare and embeddings pages that no bundled
step uses yet, and the effect figure's long measurement: a step shows the button that starts
it and its cost above the figure (meanwhile the quicker run that fits), and nothing else."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_lesson  # noqa: E402

pytestmark = pytest.mark.app

LONG = "k3bq9xw7mf2tk3bq9xw7mf2tk3bq9xw7mf2tk3bq9"  # 41 characters: 41 × 64 steps waits
LESSON = f"""
title = "New figures"
model = "tiny-induction"
text = "{LONG}"

[[steps]]
title = "Six ways"
page = "effect"
layer = 1
head = 2
explain = "Measured."

[[steps]]
title = "Every head"
page = "effect"
figure = "heads"
text = "k3bq9xw7mf2tk3bq9"
explain = "Against occlusion."

[[steps]]
title = "B minus A"
page = "compare"
figure = "difference"
model = "minilm"
text = "The cat sat on the mat."
text_b = "The dog sat on the mat."
layer = 1
head = 3
explain = "One word moved."

[[steps]]
title = "Lengths"
page = "embeddings"
figure = "lengths"
model = "minilm"
text = "The cat sat on the mat."
explain = "How long."
"""


def _charts(at) -> set[str]:
    return {c.key for c in at.get("plotly_chart")}


def _said(at) -> str:
    return " ".join(str(c.value) for c in at.get("caption"))


def test_new_figures_and_the_effect_figures_button(tmp_path, monkeypatch):
    (tmp_path / "new.toml").write_text(LESSON)
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(tmp_path))
    at = open_lesson("new")
    assert not at.exception, at.exception
    keys = {b.key for b in at.get("button")}
    assert "eff_run" in keys and "Measuring every token takes" in _said(at)
    assert "Shown now: integrated gradients with 32 steps" in _said(at)  # 41 × 32 runs at once
    assert _charts(at) == {"eff_strip"} and not at.get("title")
    assert not at.main.get("slider") and not at.main.get("select_slider")  # no page controls
    at.button(key="eff_run").click().run()
    assert not at.exception, at.exception
    assert "eff_run" not in {b.key for b in at.get("button")} and _charts(at) == {"eff_strip"}
    assert at.session_state["_eff_asked"][-1][5] == 64  # the step's own steps, measured
    for key in ("eff_heads", "cmp_diff", "emb_norms"):
        at.button(key="lesson_next_bottom").click().run()
        assert not at.exception, (key, at.exception)
        assert _charts(at) == {key}, key
        assert "eff_run" not in {b.key for b in at.get("button")}
