"""tiny-words' card in the sidebar (ui/words_card.py): every claim it makes holds on a fresh
run of the model, on sentences other than the ones the card was computed from. Each head the
card names writes the right name's score up (its direct contribution worked out here by hand
from the weights: its output through the final LayerNorm, scale held, onto the two names'
unembedding rows), looks where the card says, and the heads it says patching finds bring the
answer back when put back alone (one patched run each)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from analysis.patching import patched_metric, prepare_ids
from model import load_model
from training.english_card import swap_giver
from training.english_task import io_examples
from ui import words_card
from words_fact_checks import direct_parts

pytestmark = pytest.mark.unit

FRESH_SEED, N_FRESH = 7, 20  # not the card's prompts (english_card: the evaluation seed)


@functools.cache
def _model():
    return load_model("tiny-words")


@functools.cache
def _fresh() -> list:
    """Per fresh prompt: (clean ids, corrupted ids, right id, wrong id, tokens)."""
    tok = _model().tokenizer
    out = []
    for ex in io_examples(N_FRESH, seed=FRESH_SEED, held_out=False):
        clean = tok.rows([ex.prompt])[0]
        corrupted = tok.rows([swap_giver(ex.prompt, ex.right, ex.wrong)])[0]
        out.append((clean, corrupted, tok.index[ex.right], tok.index[ex.wrong],
                    tok.tokens(clean)))
    return out


def _attention_to(ids, tokens, name_id: int) -> np.ndarray:
    """[layer, head]: attention from the last word to every mention of the name."""
    word = _model().tokenizer.tokens([name_id])[0]
    where = [i for i, t in enumerate(tokens) if t == word]
    return _model().run_ids(torch.tensor(ids)).attentions[:, :, -1, where].sum(-1).numpy()


def test_the_heads_the_card_names_write_the_answer_and_look_where_it_says():
    training, card = words_card._stored()
    direct = np.mean([direct_parts(_model(), c, r, w) for c, _, r, w, _ in _fresh()], axis=0)
    to_right = np.mean([_attention_to(c, t, r) for c, _, r, w, t in _fresh()], axis=0)
    to_repeated = np.mean([_attention_to(c, t, w) for c, _, r, w, t in _fresh()], axis=0)
    order = np.argsort(-direct.ravel())
    top = [list(divmod(int(i), direct.shape[1])) for i in order[:len(card["name_movers"])]]
    assert sorted(top) == sorted(card["name_movers"])  # the biggest writers, again
    for layer, h in card["name_movers"]:
        assert direct[layer, h] > 1.0  # "it adds ... to the right name's score"
        said = card["attribution"][layer][h]  # on the card's own sentences: the same size here
        assert said / 2 <= direct[layer, h] <= said * 2
        copies = card["attention_to_right"][layer][h] > card["attention_to_repeated"][layer][h]
        assert (to_right[layer, h] > to_repeated[layer, h]) == copies  # where it looks
        looked = to_right if copies else to_repeated
        assert looked[layer, h] > 0.5  # "looks 71% at ...": most of its row


def test_the_heads_patching_finds_bring_the_answer_back_alone():
    _, card = words_card._stored()
    lm = _model()
    heads = [(layer, h) for layer in range(lm.cfg.n_layers) for h in range(lm.cfg.n_heads)]
    runs = [prepare_ids(lm, c, x, answer=r, wrong=w) for c, x, r, w, _ in _fresh()]
    restored = {lh: np.mean([patched_metric(p, heads=[lh]) for p in runs]) for lh in heads}
    best = sorted(restored, key=restored.get, reverse=True)
    assert [list(lh) for lh in best[:len(card["carriers"])]] == card["carriers"]
    assert restored[tuple(card["carriers"][0])] > 0.5  # most of the answer, from one head
    for layer, h in card["carriers"]:
        assert restored[(layer, h)] == pytest.approx(card["patching"][layer][h], abs=0.2)


def test_the_card_says_what_the_model_does_and_how_it_does_on_new_names():
    training, card = words_card._stored()
    lm = _model()
    first = [int(lm.run_ids(torch.tensor(c)).logits[0, -1].argmax()) == r
             for c, _, r, _, _ in _fresh()]
    assert np.mean(first) >= 0.9 and card["right_first"] >= 0.9  # as the card says
    text = "\n".join(words_card.card_lines())
    held_out = training["metrics"]["indirect object accuracy"]
    assert f"{held_out:.0%}" in text
    assert ("below the 95%" in text) == (held_out < words_card.GOAL)
    for role in ("name_movers", "carriers"):
        for layer, h in card[role]:
            assert f"ayer {layer}, head {h}" in text
    assert "{" not in text and "_" not in text  # no code on screen
