"""tiny-words, the word-level decoder this project trains itself, as shipped in weights/.

The goals of issue 36 are asserted on held-out sentences (held-out templates, names, objects
and nouns); those the shipped run does not meet yet are marked xfail(strict=True) with the
measured number, so the test starts failing, and must be unmarked, the day a run meets them.
What the model does do is asserted hard: the indirect object and agreement on fresh
sentences of its training templates, well above chance on the held-out ones, and no
behaviour at all in an untrained model of the same shape.
"""

from __future__ import annotations

import json

import pytest

from analysis.behaviours import choice_scores
from model import load_model
from model.registry import BUNDLED
from training import english_card as card_module
from training import english_task as et
from training import train as tr
from training.tasks import make_task

# The goals (BENCHMARKS.md records the measured numbers).
IO_ACCURACY, IO_LOGIT_DIFF = 0.95, 3.0
AGREEMENT_ACCURACY = 0.95
REPEAT_RATIO, INDUCTION_SCORE = 0.20, 0.8


@pytest.fixture(scope="module")
def words():
    return load_model("tiny-words")


@pytest.fixture(scope="module")
def shipped(words):
    return et.behaviours(words.model, words.tokenizer, n=1000)


def test_tokenizer_is_the_task_vocabulary(words):
    assert words.tokenizer.words == make_task("english").words
    trace = words.run("When Mary and John went to the store, John gave a drink to")
    assert trace.tokens[-3:] == [" a", " drink", " to"]


def test_the_model_names_who_gets_the_drink(words):
    """Training templates, fresh sentences: the name said once, whichever order."""
    b = choice_scores(words.model, *et.held_out_choices(
        words.tokenizer, et.io_examples(500, held_out=False)))
    assert b.top_accuracy >= 0.95 and b.mean_logit_diff >= 3.0, b
    for prompt, name in (("When Mary and John went to the store, John gave a drink to", " Mary"),
                         ("When Mary and John went to the store, Mary gave a drink to", " John")):
        ids = words.tokenizer.encode([prompt], None, 48).input_ids  # [1, pos]
        assert words.tokenizer.words[int(words.model(ids).logits[0, -1].argmax())] == name


def test_held_out_behaviours_are_well_above_chance(shipped):
    assert shipped.io.pair_accuracy >= 0.55 and shipped.io.mean_logit_diff >= 0.5, shipped.io
    assert shipped.agreement.pair_accuracy >= 0.9, shipped.agreement
    assert shipped.repeat_ratio <= 0.4 and shipped.induction_score >= 0.4
    assert shipped.induction_head[0] > 0  # induction needs a head before it: not layer 0


@pytest.mark.xfail(strict=True, reason="goal not met: held-out pair accuracy 83.1% (logit "
                   "difference 3.28 meets its goal; bench/bench_tiny_words.py)")
def test_goal_indirect_object_on_held_out_sentences(shipped):
    assert shipped.io.pair_accuracy >= IO_ACCURACY and shipped.io.mean_logit_diff >= IO_LOGIT_DIFF


def test_goal_agreement_on_held_out_sentences(shipped):
    assert shipped.agreement.pair_accuracy >= AGREEMENT_ACCURACY


@pytest.mark.xfail(strict=True, reason="goal not met: best induction score 0.62 (the "
                   "repeated half's loss, 4.3% of the first half's, meets its goal)")
def test_goal_induction_on_repeated_random_words(shipped):
    assert shipped.repeat_ratio <= REPEAT_RATIO and shipped.induction_score >= INDUCTION_SCORE


def test_untrained_model_of_the_same_shape_has_none_of_it(words):
    task = make_task("english")
    untrained = tr.build(task, tr.RECIPES["english"]).eval()
    assert untrained.cfg == words.cfg
    b = et.behaviours(untrained, task.tokenizer, n=200)
    assert abs(b.io.mean_logit_diff) < 0.5 and b.agreement.pair_accuracy < 0.8
    assert b.repeat_ratio > 0.9 and b.induction_score < 0.2


def test_model_card_is_what_the_run_computes(words):
    """weights/tiny-words/card.json was written by training/english_card.py from these
    weights: recomputed here, the same heads in each role and the same numbers."""
    kept = json.loads((BUNDLED["tiny-words"]() / "card.json").read_text())
    fresh = card_module.card(words, kept["n"])
    for role in ("name_movers", "against", "carriers"):
        assert fresh[role] == kept[role], role
    layer, head = kept["name_movers"][0]
    assert fresh["attribution"][layer][head] == pytest.approx(kept["attribution"][layer][head],
                                                              abs=1e-3)
    assert fresh["attribution"][layer][head] > 0.5  # it writes the answer
