"""Activation patching: nothing patched is the corrupted run and everything at layer 0 the clean
one, exactly; each batched cell is a separate hooked run; and on tiny-induction head patching
finds the heads the induction and previous-token scores rank first."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import patching
from analysis.induction import repeat_scores
from analysis.patching import (
    head_patching, induction_pair, patched_metric, prepare, prepare_ids,
    residual_patching,
)
from model import load_model
from model.hooks import hooks_active

CLEAN = "A dog chased the ball across the park!"
CORRUPTED = "A cat chased the ball across the park!"  # the same length in tokens


@pytest.fixture(scope="module")
def induction():
    return load_model("tiny-induction")


def _setup(name, tiny_models_loaded, induction):
    if name == "tiny-induction":
        return prepare_ids(induction, *induction_pair(8, 36, seed=3))
    return prepare(tiny_models_loaded[name], CLEAN, CORRUPTED)


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert", "tiny-induction"])
def test_nothing_patched_is_corrupted_and_layer_0_patched_is_clean_exactly(
        name, tiny_models_loaded, induction):
    p = _setup(name, tiny_models_loaded, induction)
    assert p.kind == ("cosine" if name == "bert" else "logit_diff")
    assert abs(p.clean_value - p.corrupted_value) > 1e-3
    assert patched_metric(p) == 0.0
    everything = [(0, pos) for pos in range(p.n_pos)]
    assert patched_metric(p, resid=everything) == 1.0
    assert patched_metric(p, resid=[(p.loaded.cfg.n_layers, pos) for pos in range(p.n_pos)]) \
        == 1.0
    # at layer 0 only the positions where the prompts differ hold anything to patch
    differ = [i for i in range(p.n_pos) if p.clean_ids[0, i] != p.corrupted_ids[0, i]]
    assert 0 < len(differ) < p.n_pos
    assert patched_metric(p, resid=[(0, i) for i in differ]) == 1.0
    assert patched_metric(p, resid=[(0, i) for i in range(p.n_pos) if i not in differ]) == 0.0
    assert patched_metric(p, resid=[(0, i) for i in differ[1:]]) != 1.0 or len(differ) == 1
    assert not hooks_active()


def rounding(p) -> float:
    """float32 rounding of a logit difference (about 1e-5 logits at these sizes), in the grid's
    units: a share of clean minus corrupted, so a small gap between the two makes it larger."""
    return 1e-5 / abs(p.clean_value - p.corrupted_value)


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert", "tiny-induction"])
def test_each_cell_is_a_separate_hooked_run(name, tiny_models_loaded, induction):
    p = _setup(name, tiny_models_loaded, induction)
    cfg = p.loaded.cfg
    tol = rounding(p)
    resid = residual_patching(p)
    heads = head_patching(p)
    assert resid.shape == (cfg.n_layers + 1, p.n_pos)
    assert heads.shape == (cfg.n_layers, cfg.n_heads)
    # the batched grid and a batch-of-one hooked run differ by float32 rounding only
    for row in range(cfg.n_layers + 1):
        for pos in {0, 1, p.n_pos // 2, p.n_pos - 1}:
            assert resid[row, pos] == pytest.approx(patched_metric(p, resid=[(row, pos)]),
                                                    abs=tol)
    for layer in range(cfg.n_layers):
        for head in range(cfg.n_heads):
            assert heads[layer, head] == pytest.approx(patched_metric(p, heads=[(layer, head)]),
                                                       abs=tol)
    np.testing.assert_allclose(residual_patching(p, chunk=3), resid, atol=tol)  # chunk edges
    np.testing.assert_allclose(head_patching(p, chunk=3), heads, atol=tol)
    assert np.ptp(resid) > 0.1 and np.ptp(heads) > 1e-3  # the grids are not flat


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_after_the_last_block_only_the_metric_position_matters(name, tiny_models_loaded):
    p = prepare(tiny_models_loaded[name], CLEAN, CORRUPTED)
    last = residual_patching(p)[-1]  # [pos]
    tol = rounding(p)
    assert last[p.position] == pytest.approx(1.0, abs=tol)
    assert np.abs(np.delete(last, p.position)).max() < tol
    # positions where the two prompts agree: patching them at layer 0 changes nothing
    same = [i for i in range(p.n_pos) if p.clean_tokens[i] == p.corrupted_tokens[i]]
    assert same and np.abs(residual_patching(p)[0, same]).max() < tol


def test_the_default_metric_is_clean_prediction_against_corrupted_prediction(tiny_models_loaded):
    lm = tiny_models_loaded["gpt2"]
    p = prepare(lm, CLEAN, CORRUPTED)
    clean, corrupted = lm.run(CLEAN).logits[0, -1], lm.run(CORRUPTED).logits[0, -1]  # [vocab]
    assert p.answer == int(clean.argmax())
    assert p.position == p.n_pos - 1
    assert p.clean_value == pytest.approx(float(clean[p.answer] - clean[p.wrong]), abs=1e-5)
    assert p.corrupted_value == pytest.approx(
        float(corrupted[p.answer] - corrupted[p.wrong]), abs=1e-5)
    chosen = prepare(lm, CLEAN, CORRUPTED, answer=5, wrong=9, position=2)
    assert (chosen.answer, chosen.wrong, chosen.position) == (5, 9, 2)


def _mean_head_grid(lm, corrupt: str, n: int = 16, length: int = 10) -> np.ndarray:
    """Head patching averaged over n random repeated sequences (as the induction score
    averages over sequences): in one sequence the four layer-1 heads share the work."""
    grids = [head_patching(prepare_ids(lm, *induction_pair(length, 36, seed, corrupt)))
             for seed in range(n)]
    return np.mean(grids, axis=0)  # [layer, head]


def test_the_preset_averages_separate_sequences_and_keeps_the_first_ones_grid(induction):
    steps = []
    preset = patching.induction_preset(induction, 10, 36, seed=3, n_seqs=3, corrupt="first",
                                       progress=lambda done, total: steps.append((done, total)))
    grids = [head_patching(prepare_ids(induction, *induction_pair(10, 36, s, "first")))
             for s in (3, 4, 5)]
    np.testing.assert_allclose(preset["heads"], np.mean(grids, axis=0), atol=1e-6)
    np.testing.assert_allclose(preset["single"], grids[0], atol=1e-6)
    first = prepare_ids(induction, *induction_pair(10, 36, 3, "first"))
    np.testing.assert_allclose(preset["resid"], residual_patching(first), atol=1e-6)
    assert steps == [(1, 3), (2, 3), (3, 3)]


def test_head_patching_finds_the_induction_head(induction):
    scores = repeat_scores(induction.model)
    induction_top = np.unravel_index(int(scores["induction"].argmax()), (2, 4))
    grid = _mean_head_grid(induction, "second")  # x x against x y: the copy corrupted
    assert np.unravel_index(int(grid.argmax()), grid.shape) == induction_top
    assert grid[1].min() > grid[0].max()  # the whole induction layer above layer 0


def test_corrupting_the_first_copy_lights_up_the_previous_token_head(induction):
    scores = repeat_scores(induction.model)
    previous_top = int(scores["previous"][0].argmax())
    grid = _mean_head_grid(induction, "first")  # x x against y x: the earlier occurrence gone
    assert int(grid[0].argmax()) == previous_top
    assert grid[0, previous_top] > 0.3 and grid[1].max() > 0.2  # both kinds of head light up


def test_bad_requests_get_a_clear_message(tiny_models_loaded, induction, monkeypatch):
    lm = tiny_models_loaded["gpt2"]
    with pytest.raises(ValueError, match="clean prompt is 9 tokens long and the corrupted "
                                         "prompt 7"):
        prepare(lm, CLEAN, "The cat sat on the mat.")
    with pytest.raises(ValueError, match="nothing to recover"):
        prepare(lm, CLEAN, CLEAN)
    with pytest.raises(ValueError, match="41 tokens long; patching takes at most 40"):
        prepare_ids(lm, [1] * 41, [2] * 41)  # the tiny GPT-2's context is 40
    monkeypatch.setattr(patching, "MAX_PATCH_TOKENS", 6)  # the bound, below the context
    with pytest.raises(ValueError, match="9 tokens long; patching takes at most 6"):
        prepare(lm, CLEAN, CORRUPTED)
    monkeypatch.undo()
    long = "abcdefghijklmnopqrstuvwxyz0123456789" * 2  # 72 characters, context 48
    with pytest.raises(ValueError, match="72 tokens long; patching takes at most 48"):
        prepare(induction, long, long[::-1])
    with pytest.raises(ValueError, match="encoder–decoder"):
        prepare(load_model("tiny-reverse"), "abc", "abd")
    p = prepare_ids(induction, *induction_pair(8, 36))
    with pytest.raises(ValueError, match="outside"):
        patched_metric(p, heads=[(2, 0)])
    with pytest.raises(ValueError, match="outside"):
        patched_metric(p, resid=[(0, p.n_pos)])
