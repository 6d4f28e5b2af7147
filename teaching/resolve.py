"""A step made concrete: its page settings and texts with every fact filled in from the run.

`runner(model, text, pair)` returns (LoadedModel, Trace); the app passes its cached runs, the
tests plain `load_model(...).run(...)`. `label(model id)` is the model's name as the app shows
it ("MiniLM"), for the `run.model` fact; without it the id is used.
"""

from __future__ import annotations

from collections.abc import Callable

from .facts import FACTS, FactError, FactInputs, compute, find_row
from .format import ModelShape, Step, check_range, step_words
from .render import fill, fill_all, placeholders, resolve_setting

Runner = Callable[[str, str, str], tuple]


def _inputs(step: Step, runner: Runner, settings: dict | None, train, label=None) -> FactInputs:
    loaded, trace = runner(step.model, step.text, step.pair)
    return FactInputs(loaded, trace, settings or {}, train=train, label=label)


def step_settings(step: Step, runner: Runner, train=None,
                  label=None) -> tuple[dict, dict[str, dict]]:
    """The step's page settings with facts filled in (range-checked), and those facts."""
    names = set()
    for value in step.settings.values():
        if isinstance(value, str):
            names |= placeholders(value)
    if any(FACTS[n].uses_settings for n in names):
        raise FactError("a page setting may not use a fact that depends on the settings")
    facts = {}
    if names:
        inputs = _inputs(step, runner, None, train, label)
        facts = {name: compute(name, inputs) for name in sorted(names)}
    resolved = {k: resolve_setting(v, facts) for k, v in step.settings.items()}
    loaded, _ = runner(step.model, step.text, step.pair)
    cfg = loaded.model.cfg
    check_range(step, ModelShape(cfg.n_layers, cfg.n_heads), resolved)
    return resolved, facts


def step_parts(step: Step) -> dict[str, str]:
    """Every text of a step that may hold facts, by name (option0, option1... for options)."""
    return step_words(step)


ANSWER_PARTS = ("answer", "reveal")


def step_texts(step: Step, runner: Runner, train=None, with_answer: bool = True,
               label=None) -> tuple[dict, dict[str, str], dict]:
    """(resolved settings, filled texts, every fact used) for one step. Without the answer,
    the answer and reveal are left out (and so are the facts only they need, which may be slow
    to compute: the app asks first and works out the answer once the learner has guessed)."""
    resolved, facts = step_settings(step, runner, train, label)
    parts = step_parts(step)
    if not with_answer:
        parts = {k: v for k, v in parts.items() if k not in ANSWER_PARTS}
    names = set().union(*(placeholders(t) for t in parts.values())) - set(facts)
    inputs = _inputs(step, runner, resolved, train, label) if names else None
    for name in sorted(placeholders(parts.get("row", "")) - set(facts)):
        facts[name] = compute(name, inputs)  # the question's row first: "cell" reads it
    row = fill(parts.get("row", ""), facts)
    if step.question is not None and step.question.kind == "cell":
        _check_row(step, runner, row)
    if inputs is not None:
        inputs.row = row
        facts |= {name: compute(name, inputs) for name in sorted(names - set(facts))}
    try:
        texts = fill_all(parts, facts)
    except FactError as exc:
        raise FactError(f"line {step.line}: {exc}" if step.line else str(exc)) from None
    return resolved, texts, facts


def _check_row(step: Step, runner: Runner, row: str) -> None:
    """A cell question's row is a token of the step's text (FactError naming the line)."""
    _, trace = runner(step.model, step.text, step.pair)
    try:
        find_row(trace.tokens, row)
    except FactError:
        where = f"line {step.line}: " if step.line else ""
        shown = row.strip()[:40] + ("…" if len(row.strip()) > 40 else "")
        raise FactError(f"{where}the question asks about the row of “{shown}”, but "
                        "the step's text has no such word (row must be a word of the text, "
                        "as the model splits it)") from None
