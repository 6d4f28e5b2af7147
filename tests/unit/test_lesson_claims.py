"""Every claim of every bundled lesson is computed from the bundled models, and checked here
against a second, independent computation: a retrained or changed model cannot silently make a
lesson false. Lesson prose holds no typed numbers at all."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from bundled_lessons import default_induction
from lab_fact_checks import verify_lab
from model import load_model
from teaching.facts import JUMP_SCORE, WALK_NAMES, amount, plain, when_phrase
from teaching.format import PLACEHOLDER, parse_lesson
from teaching.resolve import step_parts, step_texts

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted((ROOT / "teaching" / "bundled").glob("*.toml"))
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in BUNDLED]
STEPS = [(lesson, i) for lesson in LESSONS for i in range(len(lesson.steps))]


@functools.cache
def _model(name: str):
    return load_model(name)


def _runner(name: str, text: str, pair: str):
    return _model(name), _model(name).run(text, pair or None)


@pytest.fixture(scope="module")
def induction():
    return default_induction()


def test_there_are_at_least_six_bundled_lessons_covering_the_topics():
    ids = {lesson.id for lesson in LESSONS}
    assert len(ids) >= 6
    pages = {step.page for lesson in LESSONS for step in lesson.steps}
    assert {"attention", "heads", "walkthrough", "positions", "training"} <= pages
    models = set().union(*(lesson.models() for lesson in LESSONS))
    assert {"minilm", "tiny-chars", "tiny-reverse", "tiny-induction"} <= models


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_lesson_prose_types_no_numbers(lesson):
    """Numbers come only from facts: strip the placeholders, and no digit is left."""
    texts = [lesson.title, lesson.summary]
    for step in lesson.steps:
        texts += list(step_parts(step).values())
    for text in texts:
        bare = PLACEHOLDER.sub("", text)
        assert not re.search(r"\d", bare), f"{lesson.id}: a typed number in {text[:120]!r}"


# ---------------------------------------------------------------- independent computations
def _mean_offset(a: np.ndarray, offset: int) -> np.ndarray:
    """[n_layers, head]: the mean of A[i, i + offset] over the rows that have that key."""
    n = a.shape[-1]
    rows = [i for i in range(n) if 0 <= i + offset < n]
    return np.mean([a[..., i, i + offset] for i in rows], axis=0)


def _special(trace) -> np.ndarray:
    ids = set(_model(trace.model_name).tokenizer.special_ids)
    return np.array([int(i) in ids for i in trace.input_ids[0]])


def _check_best(fact: dict, values: np.ndarray) -> None:
    layer, head = np.unravel_index(values.argmax(), values.shape)
    assert (fact["layer"], fact["head"]) == (layer, head)
    assert fact["share"] == pytest.approx(values[layer, head], abs=1e-6)


def _verify(name: str, fact: dict, trace, settings: dict, row: str, induction: dict,
            prose: str = "") -> None:
    a = trace.attentions.double().numpy() if trace.kind != "encoder_decoder" or name != "cross" \
        else None
    if name == "run":
        _verify_run(fact, trace, prose)
    elif name == "broad":
        entropy = -(a * np.log2(np.clip(a, 1e-30, 1))).sum(-1)  # [layer, head, q], bits
        _check_best({**fact, "share": fact["bits"]}, entropy.mean(-1))
    elif name == "spread":
        _verify_spread(fact, a[settings["layer"], settings["head"]], trace)
    elif name in ("prev", "next", "selfish"):
        offset = {"prev": -1, "next": 1, "selfish": 0}[name]
        _check_best(fact, _mean_offset(a, offset))
        assert fact["amount"] == amount(fact["share"])
        if "stripe" in prose:  # a lesson calling it a bright stripe beside the diagonal
            assert fact["share"] > 0.5
    elif name == "sink":
        special = _special(trace)
        _check_best(fact, a[..., special].sum(-1).mean(-1))
        assert fact["token"] in [t for t, s in zip(trace.tokens, special) if s]
    elif name == "samew":
        words = [plain(t).lower() for t in trace.tokens]
        special = _special(trace)
        shares = []
        for i, w in enumerate(words):
            copies = [j for j, u in enumerate(words) if u == w and j != i and not special[j]]
            if copies and not special[i] and w.isalpha():
                shares.append(a[..., i, copies].sum(-1))
        _check_best(fact, np.mean(shares, axis=0))
        assert fact["word"].lower() in words and words.count(fact["word"].lower()) > 1
    elif name == "rows":
        sums = a.sum(-1)
        assert fact["min"] == pytest.approx(sums.min()) and fact["max"] == pytest.approx(sums.max())
        assert fact["total"] == "exactly one" and np.allclose(sums, 1, atol=1e-4)
    elif name == "mask":
        n = a.shape[-1]
        above = max(a[..., i, j].max() for i in range(n) for j in range(i + 1, n))
        assert fact["above"] == pytest.approx(above) and trace.cfg.causal and above == 0
        assert fact["where"].startswith("above") and fact["first"] == pytest.approx(1.0)
    elif name == "pos":
        _verify_positions(fact, trace)
    elif name == "cross":
        _verify_cross(fact, trace)
    elif name == "cell":
        i = next(k for k, t in enumerate(trace.tokens) if plain(t).lower() == row.lower())
        weights = a[settings["layer"], settings["head"], i]
        assert fact["brightest"] == plain(trace.tokens[int(weights.argmax())])
        assert fact["share"] == pytest.approx(weights.max(), abs=1e-6)
    elif name == "walk":
        from analysis.walkthrough import walkthrough

        steps = walkthrough(_model(trace.model_name).run(trace.texts[0], keep=None), 0)
        for key, number in fact.items():
            if key != "count" and number is not None:
                assert steps[number - 1].key == WALK_NAMES.get(key, key)
        assert fact["count"] == len(steps)
    elif name == "indhead":
        n = fact["length"]
        scores = np.mean([a[..., n + i, i + 1] for i in range(n)], axis=0)  # [layer, head]
        _check_best({"layer": fact["layer"], "head": fact["head"], "share": fact["score"]},
                    scores)
        assert fact["prev_head"] == int(_mean_offset(a, -1)[0].argmax())
        assert (fact["a"], fact["b"]) == tuple(plain(t) for t in trace.tokens[:2])
        assert trace.tokens[:n] == trace.tokens[n:2 * n]
    elif name == "induction":
        assert fact == induction  # the same settings, the same run: deterministic
    elif not verify_lab(name, fact, trace, settings, _model(trace.model_name), prose):
        raise AssertionError(f"fact {name!r} has no independent check: add one")


def _verify_run(fact: dict, trace, prose: str) -> None:
    cfg = trace.cfg
    assert fact["tokens"] == len(trace.tokens) == trace.input_ids.shape[1]
    assert (fact["layers"], fact["heads"], fact["d_model"]) == (
        cfg.n_layers, cfg.n_heads, cfg.d_model)
    assert fact["heads_total"] == cfg.n_layers * cfg.n_heads
    assert fact["d_head"] * cfg.n_heads == cfg.d_model
    assert fact["vocab"] == _model(trace.model_name).model.embed.W_E.weight.shape[0]
    special = _special(trace)
    assert fact["markers"] == int(special.sum())
    assert fact["pieces"] + fact["markers"] == fact["tokens"]  # the count includes the markers
    assert fact["words"] == len(re.findall(r"\S+", trace.texts[0]))
    if "markers" in prose and "at the start" in prose:  # "... {run.first} at the start"
        assert special[0] and special[-1] and fact["markers"] == 2
        assert (fact["first"], fact["last"]) == (plain(trace.tokens[0]), plain(trace.tokens[-1]))


def _verify_spread(fact: dict, a: np.ndarray, trace) -> None:
    """The row to add up by hand: spread out (no square holds more than half of it), its
    written parts true to two decimals, and they add up to the written total."""
    special = _special(trace)
    rows = [i for i in range(len(a)) if not special[i]]
    entropy = [-(a[i] * np.log(np.clip(a[i], 1e-12, 1))).sum() for i in rows]
    i = rows[int(np.argmax(entropy))]
    assert fact["token"] == plain(trace.tokens[i])
    row = np.sort(a[i])[::-1]
    assert row[0] < 0.5 and fact["largest"] == pytest.approx(row[0], abs=1e-6)  # not one-hot
    written = [float(v) for v in re.split(r", | and ", fact["top"])]
    assert written == pytest.approx(row[:fact["shown"]], abs=0.005)
    assert fact["others"] == len(row) - fact["shown"] > 0
    assert fact["rest"] == pytest.approx(row[fact["shown"]:].sum(), abs=0.005 * (
        fact["shown"] + 1))
    assert round(sum(written) + fact["rest"], 2) == fact["total"] == pytest.approx(1.0, abs=5e-3)


def _verify_positions(fact: dict, trace) -> None:
    model = _model(trace.model_name).model
    n = fact["count"]
    table = (model.embed.W_pos.weight[:n] if fact["kind"] == "learned" else model.embed.pe[:n])
    x = torch.nn.functional.normalize(table.double(), dim=-1)
    cos = lambda d: float(np.mean([float(x[i] @ x[i + d]) for i in range(n - d)]))  # noqa: E731
    assert fact["near"] == pytest.approx(cos(1), abs=1e-6)
    assert fact["far"] == pytest.approx(cos(fact["far_distance"]), abs=1e-6)
    assert fact["pattern"].startswith("yes") == (fact["near"] > fact["far"] + 0.1)


def _verify_cross(fact: dict, trace) -> None:
    cross = trace.cross_attentions.double().numpy()  # [layer, head, out, src]
    word = trace.tokens[:-1]
    assert fact["input"] == "".join(word) and fact["output"] == "".join(reversed(word))
    layer = cross.shape[0] - 1
    shares = [np.mean([cross[layer, h, i].argmax() == len(word) - 1 - i
                       for i in range(len(word))]) for h in range(cross.shape[1])]
    assert fact["share"] == pytest.approx(max(shares)) and fact["head"] == int(np.argmax(shares))
    assert fact["share"] >= 0.75  # the lesson says the bright squares run along the anti-diagonal
    first = cross[layer, fact["head"], 0].argmax()
    assert fact["first_looks"] == ("the last letter" if first == len(word) - 1 else
                                   "the first letter" if first == 0 else "another letter")


@pytest.mark.parametrize("lesson, index", STEPS,
                         ids=[f"{lesson.id}-{i + 1}" for lesson, i in STEPS])
def test_every_claim_of_every_step_holds(lesson, index, induction):
    verify_step(lesson.steps[index], _runner, induction)


def verify_step(step, runner, induction: dict) -> dict[str, dict]:
    """Every fact of the step filled in and checked against an independent computation, and a
    choice question's answer one of its options, all different; the facts, by name."""
    settings, texts, facts = step_texts(step, runner, train=lambda: induction)
    assert not PLACEHOLDER.search(" ".join(texts.values())), "a fact was left unfilled"
    trace = runner(step.model, step.text, step.pair)[1]
    for name, fact in facts.items():
        _verify(name, fact, trace, settings, texts.get("row", ""), induction,
                " ".join(texts.values()))
    if step.question is not None and step.question.kind == "choice":
        options = [texts[f"option{i}"] for i in range(len(step.question.options))]
        assert texts["answer"] in options and len(set(options)) == len(options), options
    return facts


def test_the_induction_prediction_is_read_from_the_run(induction):
    """The training page's default run: the jump step is a snapshot step, and the words of
    the answer follow from it."""
    from server.training_runs import DEFAULT_SNAPSHOT_EVERY

    assert induction["jumped"] and induction["score"] >= JUMP_SCORE
    assert induction["step"] % DEFAULT_SNAPSHOT_EVERY == 0 < induction["step"]
    assert induction["when"] == when_phrase(induction["step"], induction["steps"])
