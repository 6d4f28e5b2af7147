"""An operator's lesson file for the live-class tests (AppTest and Chromium): one step that runs
a whole page with its own slider (`figure = "page"`: the Embeddings page, its layer at 2), so a setting the
teacher moves inside the step can travel to the class."""

from __future__ import annotations

from pathlib import Path

LESSON_ID = "layers-class"
LESSON = f"""
id = "{LESSON_ID}"
title = "Layers in class"
model = "minilm"
text = "The cat sat on the mat because it was warm."

[[steps]]
title = "Tokens move through the layers"
page = "embeddings"
figure = "page"
layer = 2
explain = "Each layer moves the tokens to new places."
"""


def write_lesson(folder: Path) -> Path:
    """The lesson as `layers.toml` in `folder` (an operator's lessons folder)."""
    path = folder / "layers.toml"
    path.write_text(LESSON, encoding="utf-8")
    return path
