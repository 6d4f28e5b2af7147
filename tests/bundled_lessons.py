"""The bundled lessons, parsed once, and a runner that fills in their facts from the bundled
models (each model loaded once), for the unit tests that read a lesson's texts."""

from __future__ import annotations

import functools
from pathlib import Path

from model import load_model
from teaching.figures import FIGURES
from teaching.format import parse_lesson

BUNDLED = sorted((Path(__file__).resolve().parents[1] / "teaching" / "bundled").glob("*.toml"))
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in BUNDLED]
# The course's lessons written but not offered yet (teaching/course/pending/README.md says why):
# the course checks and the facts' independent checks read them with the bundled ones.
PENDING_DIR = Path(__file__).resolve().parents[1] / "teaching" / "course" / "pending"
PENDING = sorted(PENDING_DIR.glob("*.toml"))
PENDING_LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in PENDING]
COURSE = LESSONS + PENDING_LESSONS
# The pending steps on pages that now have a figure (teaching/figures.py) but that no bundled
# lesson opens: (lesson, step number), for the checks every bundled step gets (each step's
# figure alone, in AppTest; above the fold and on the projector, in Chromium). A server or an
# AppTest offers them with ATTENTION_LAB_LESSONS set to PENDING_DIR.
NEW_FIGURE_STEPS = [
    (lesson, number) for lesson in PENDING_LESSONS for number, step in enumerate(lesson.steps, 1)
    if step.page in set(FIGURES) - {s.page for bundled in LESSONS for s in bundled.steps}]


@functools.cache
def bundled_model(name: str):
    return load_model(name)


def run_text(name: str, text: str, pair: str):
    """The runner step_texts asks for: the model and its run on the text (and pair)."""
    return bundled_model(name), bundled_model(name).run(text, pair or None)
