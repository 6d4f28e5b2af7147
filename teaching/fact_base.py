"""What a fact is: the inputs it is computed from and its declaration (teaching/facts.py lists
the facts; teaching/facts_lab.py adds the course's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


class FactError(ValueError):
    """A fact does not apply to this step (e.g. the same-word head on a text with no repeat)."""


@dataclass
class FactInputs:
    model: object  # model.LoadedModel, shared: never mutated
    trace: object  # model.Trace of the step's text
    settings: dict = field(default_factory=dict)  # the step's page settings, resolved
    row: str = ""  # a cell question's row token
    train: Callable[[], dict] | None = None  # runs the training page's default induction run
    label: Callable[[str], str] | None = None  # a model's name as the app shows it (the id if None)


@dataclass(frozen=True)
class Fact:
    fields: tuple[str, ...]
    compute: Callable[[FactInputs], dict]
    uses_settings: bool = False
    describe: str = ""


def plain(token: str) -> str:
    """A token as a learner reads it: no tokenizer marks."""
    for mark in ("##", "Ġ", "▁"):
        token = token.replace(mark, "")
    return token
