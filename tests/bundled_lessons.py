"""The bundled lessons, parsed once, and a runner that fills in their facts from the bundled
models (each model loaded once), for the unit tests that read a lesson's texts."""

from __future__ import annotations

import functools
from pathlib import Path

from model import load_model
from teaching.format import parse_lesson

BUNDLED = sorted((Path(__file__).resolve().parents[1] / "teaching" / "bundled").glob("*.toml"))
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in BUNDLED]
# The course's lessons written but not offered yet (teaching/course/pending/README.md says why):
# the course checks and the facts' independent checks read them with the bundled ones.
PENDING_DIR = Path(__file__).resolve().parents[1] / "teaching" / "course" / "pending"
PENDING = sorted(PENDING_DIR.glob("*.toml"))
COURSE = LESSONS + [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in PENDING]
# The pages whose steps in the pending lessons show their one figure (teaching/figures.py): the
# app and browser tests open those steps, served with PENDING_DIR as the operator's folder.
PENDING_FIGURE_PAGES = ("ablation", "logit-lens", "generate")
PENDING_STEPS = [(lesson, number) for lesson in COURSE[len(LESSONS):]
                 for number, step in enumerate(lesson.steps, 1)
                 if step.page in PENDING_FIGURE_PAGES]


@functools.cache
def bundled_model(name: str):
    return load_model(name)


def run_text(name: str, text: str, pair: str):
    """The runner step_texts asks for: the model and its run on the text (and pair)."""
    return bundled_model(name), bundled_model(name).run(text, pair or None)
