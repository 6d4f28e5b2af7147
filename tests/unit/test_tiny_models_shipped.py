"""The models this project trained itself, as shipped in weights/: loaded by name and
tested for what each was trained to do. Nothing here retrains them (a 20-step replay checks
that the documented command still starts the same run)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from model import load_model
from training import train as tr
from analysis.induction import repeat_scores
from tiny_models import chance_score
from model.registry import BUNDLED, OWN_MODELS
from analysis.cross_attention import reversal_scores
from training.tasks import INDUCTION_CHARS, corpus, make_task

ROOT = Path(__file__).resolve().parents[2]
TASK_OF = {"tiny-induction": "induction", "tiny-chars": "chars", "tiny-reverse": "reverse",
           "tiny-words": "english"}  # tiny-words' behaviours: test_tiny_words.py


@pytest.fixture(scope="module")
def models():
    return {name: load_model(name) for name in OWN_MODELS}


def _config(name: str) -> dict:
    return json.loads((BUNDLED[name]() / "config.json").read_text())


@pytest.mark.parametrize("name", OWN_MODELS)
def test_shipped_model_is_small_complete_and_documented(name):
    directory = BUNDLED[name]()
    from ui.model_names import ABOUT  # what the sidebar says of it

    assert directory == ROOT / "weights" / name and name in ABOUT
    files = {p.name: p.stat().st_size for p in directory.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(files)
    assert sum(files.values()) < 5_000_000
    command = f"python -m training --task {TASK_OF[name]} --seed 0 --out weights/{name}"
    assert _config(name)["training"]["command"] == command
    assert command in (ROOT / "weights" / "README.md").read_text()
    assert command in (tr.__doc__ or "")


@pytest.mark.parametrize("name", OWN_MODELS)
def test_documented_command_replays_the_first_steps(name):
    """The recipe, seed and code of today start exactly the run that made the weights."""
    recipe = dataclasses.replace(tr.RECIPES[TASK_OF[name]], steps=5)
    shipped = _config(name)["training"]
    assert dataclasses.asdict(tr.RECIPES[TASK_OF[name]]) == shipped["settings"]
    replay = tr.train(make_task(TASK_OF[name]), recipe).losses
    # Same arithmetic up to the CPU's summation order (thread count): 1e-5 relative.
    assert_close(torch.tensor(replay), torch.tensor(shipped["first_losses"][:5]),
                 rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", OWN_MODELS)
def test_shipped_models_run_on_typed_text(models, name):
    lm = models[name]
    trace = lm.run("the cat sat")
    n = trace.n_tokens
    assert trace.attentions.shape == (lm.cfg.n_layers, lm.cfg.n_heads, n, n)
    assert_close(trace.attentions.sum(-1), torch.ones(lm.cfg.n_layers, lm.cfg.n_heads, n))


# ------------------------------------------------------------------------- tiny-induction
def test_induction_model_has_induction_and_previous_token_heads(models):
    model = models["tiny-induction"].model
    scores = repeat_scores(model, n_seqs=64, length=20, seed=2024, n_symbols=36)
    assert scores["induction"][1].max() >= 0.5  # an induction head in layer 1
    assert scores["previous"][0].max() >= 0.5  # a previous-token head in layer 0
    assert scores["induction"][0].max() < 0.2  # layer 0 cannot do induction alone


def test_untrained_model_of_the_same_shape_scores_near_chance(models):
    task = make_task("induction")
    untrained = tr.build(task, tr.RECIPES["induction"]).eval()
    assert untrained.cfg == models["tiny-induction"].cfg
    scores = repeat_scores(untrained, n_seqs=64, length=20, seed=2024, n_symbols=36)
    assert scores["induction"][1].max() < chance_score(20) + 0.05


def test_induction_head_points_at_the_token_after_the_earlier_copy(models):
    lm = models["tiny-induction"]
    text = "q8r2vna5kz7d"  # not the probe used while training
    trace = lm.run(text * 2)
    heads = trace.attentions[1]  # [head, q_pos, k_pos]
    n = len(text)
    best = max(range(lm.cfg.n_heads),
               key=lambda h: float(heads[h, n:].argmax(-1).eq(torch.arange(1, n + 1)).sum()))
    hits = heads[best, n:].argmax(-1).eq(torch.arange(1, n + 1)).float().mean()
    assert hits >= 0.9
    assert set(text) <= set(INDUCTION_CHARS)


# ----------------------------------------------------------------------------- tiny-chars
def test_chars_model_beats_the_unigram_baseline_on_held_out_text(models):
    task = make_task("chars")
    lm = models["tiny-chars"]
    assert lm.tokenizer.chars == task.chars
    loss = task.held_out_loss(lm.model)
    assert loss < 0.5 * task.unigram, (loss, task.unigram)


def _known_word_share(model, chars: str, n_chars: int) -> tuple[float, int]:
    text = tr.generate(model, chars, "The model ", n_chars, temperature=0.8, seed=0)
    words = re.findall(r"[a-z]+", text.lower())
    vocabulary = set(re.findall(r"[a-z]+", corpus()[0].lower()))
    return sum(w in vocabulary for w in words) / max(1, len(words)), len(words)


def test_chars_model_writes_recognisable_text(models):
    lm = models["tiny-chars"]
    share, n_words = _known_word_share(lm.model, lm.tokenizer.chars, 250)
    assert n_words >= 30 and share >= 0.85, (share, n_words)
    untrained = tr.build(make_task("chars"), tr.RECIPES["chars"]).eval()
    assert _known_word_share(untrained, lm.tokenizer.chars, 100)[0] < 0.5  # the test can fail


# --------------------------------------------------------------------------- tiny-reverse
def test_reverse_cross_attention_sits_on_the_source_letter_being_copied(models):
    task = make_task("reverse")
    batch = task.batch(torch.Generator().manual_seed(2024), 128)  # fresh words
    align, accuracy = reversal_scores(models["tiny-reverse"].model, batch, bos=1, eos=2)
    assert align.shape == (2, 4)  # [decoder layer, head]
    assert align[-1].mean() > 0.8, align  # the last decoder layer: an anti-diagonal
    assert accuracy > 0.95


def test_reverse_model_reverses_typed_words(models):
    lm = models["tiny-reverse"]
    trace = lm.run(["softmax", "Heads"])
    assert trace.outputs == ["xamtfos", "sdaeh"]
    cross = trace.cross_attentions[0, -1].mean(0)  # [out_pos, src_pos], "softmax"
    assert cross.shape == (8, 8)  # reads BOS + 7 letters; the source is 7 letters + EOS
    assert torch.equal(cross[:7].argmax(-1), torch.arange(6, -1, -1))  # anti-diagonal
