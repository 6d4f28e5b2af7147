"""The bundled lessons, parsed once, and a runner that fills in their facts from the bundled
models (each model loaded once), for the unit tests that read a lesson's texts."""

from __future__ import annotations

import functools
from pathlib import Path

from model import load_model
from teaching.format import parse_lesson

BUNDLED = sorted((Path(__file__).resolve().parents[1] / "teaching" / "bundled").glob("*.toml"))
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in BUNDLED]


@functools.cache
def bundled_model(name: str):
    return load_model(name)


def run_text(name: str, text: str, pair: str):
    """The runner step_texts asks for: the model and its run on the text (and pair)."""
    return bundled_model(name), bundled_model(name).run(text, pair or None)


@functools.cache
def default_induction() -> dict:
    """The induction fact: the training page's default run (the same settings give the same
    run), trained once per test process for every file that needs it."""
    from teaching.facts import induction_run
    from server.training_runs import default_settings

    return induction_run(default_settings("induction"))
