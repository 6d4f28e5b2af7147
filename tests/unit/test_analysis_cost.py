"""The cost model (analysis/cost.py) against measured memory, and chunking that changes nothing:
every heavy analysis run in the smallest chunks a tiny allowance allows gives the numbers it
gives in one big chunk.

The memory check runs each analysis in a fresh subprocess on the real MiniLM (a tiny model's
activations would drown in the interpreter's own noise) and samples its resident memory every
2 ms: the peak it adds must be at most the estimate, and the estimate at most 3 times it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from analysis import cost
from analysis.ablation import Inputs, importance_sweep, sweep_chunk
from analysis.effect import all_heads, occlusion, occlusion_chunk
from analysis.effect_target import make_target
from analysis.gradients import ig_chunk, integrated_gradients
from analysis.patching import head_patching, patch_chunk, prepare_ids, residual_patching

ROOT = Path(__file__).resolve().parents[2]
MB = 2**20

MEASURE = r"""
import json, os, sys, threading, time
sys.path.insert(0, sys.argv[1])
import torch
torch.set_num_threads(1)
from model.allocator import keep_freed_memory
keep_freed_memory()  # as the app runs
from model import load_model
from analysis import ablation, effect, gradients, patching
from analysis.ablation import Inputs
from analysis.effect_target import make_target

kind, n, chunk = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lm = load_model("minilm")
ids = torch.tensor([[101] + [2003 + (i % 50) for i in range(n - 2)] + [102]])  # [1, n]
inputs = Inputs(ids, torch.ones_like(ids), torch.zeros_like(ids))
target = make_target(lm, inputs, pooling="mean")
small = Inputs(ids[:, :8], torch.ones_like(ids[:, :8]), torch.zeros_like(ids[:, :8]))
gradients.integrated_gradients(lm, make_target(lm, small, pooling="mean"), small, "zero", 2)
effect.occlusion(lm, make_target(lm, small, pooling="mean"), small, "mask")

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def run():
    if kind == "ig":
        gradients.integrated_gradients(lm, target, inputs, "zero", chunk, chunk=chunk)
    elif kind == "occlusion":
        effect.occlusion(lm, target, inputs, "mask", chunk=chunk)
    elif kind == "sweep":
        ablation.importance_sweep(lm, inputs, chunk=chunk)
    elif kind == "patching":
        p = patching.prepare_ids(lm, ids[0], torch.cat([ids[0, :1], ids[0, 1:].flip(0)]))
        patching.residual_patching(p, chunk=chunk)
    elif kind == "full":
        from analysis.walkthrough import keep
        lm.run_ids(ids, keep=keep)

base, peak, done = rss(), [0], [False]
def sample():
    while not done[0]:
        peak[0] = max(peak[0], rss())
        time.sleep(0.002)
thread = threading.Thread(target=sample)
thread.start()
run()
done[0] = True
thread.join()
print(json.dumps({"added": max(peak[0], rss()) - base}))
"""


def _measured(kind: str, n: int, chunk: int) -> int:
    out = subprocess.run([sys.executable, "-c", MEASURE, str(ROOT), kind, str(n), str(chunk)],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1"))
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])["added"]


ESTIMATES = {  # kind -> (tokens, chunk, the estimate of that one chunk from the config)
    "ig": (256, 4, lambda cfg: cost.integrated_gradients_bytes(cfg, 256, 4)),
    "occlusion": (256, 12, lambda cfg: cost.occlusion_bytes(cfg, 256, 12)),
    "sweep": (256, 12, lambda cfg: cost.sweep_plan(cfg, 256, 10**12).most),
    "patching": (128, 64, lambda cfg: cost.patching_plan(
        cfg, 128, allowance=cost.patching_bytes(cfg, 128, 64)).most),
    "full": (512, 1, lambda cfg: cost.full_run_plan(cfg, 512).most),
}


@pytest.mark.parametrize("kind", list(ESTIMATES))
def test_the_estimate_covers_the_measured_peak_and_is_not_absurd(kind, minilm):
    n, chunk, estimate = ESTIMATES[kind]
    predicted, measured = estimate(minilm.cfg), _measured(kind, n, chunk)
    assert measured > 20 * MB, f"{kind}: {measured / MB:.0f} MB is too small to compare"
    assert measured <= predicted <= 3 * measured, (
        f"{kind}: estimated {predicted / MB:.0f} MB, measured {measured / MB:.0f} MB")


def test_largest_chunk_is_the_largest_that_fits(minilm):
    cfg = minilm.cfg
    for allowance in (1, 100 * MB, 512 * MB, 4096 * MB):
        b = cost.largest_chunk(lambda s: cost.integrated_gradients_bytes(cfg, 300, s),
                               allowance, 256)
        if b > 1 or cost.integrated_gradients_bytes(cfg, 300, 1) <= allowance:
            assert cost.integrated_gradients_bytes(cfg, 300, b) <= allowance
        if b < 256:
            assert cost.integrated_gradients_bytes(cfg, 300, b + 1) > allowance
    assert cost.largest_chunk(lambda s: s, 10**9, 7) == 7  # capped by `most`
    assert cost.largest_chunk(lambda s: s * 10, 5, 7) == 1  # nothing fits: one at a time


def test_costs_grow_with_tokens_and_chunks(minilm):
    cfg = minilm.cfg
    for fn in (cost.integrated_gradients_bytes, cost.occlusion_bytes, cost.sweep_bytes,
               cost.patching_bytes):
        assert fn(cfg, 128, 2) < fn(cfg, 256, 2) < fn(cfg, 256, 4)
    plan = cost.effect_plan(cfg, 512, 16, occlusion=False, allowance=512 * MB)
    assert plan.least <= plan.most <= 512 * MB < cost.integrated_gradients_bytes(cfg, 512, 16)
    assert cost.effect_seconds(cfg, 512, 16, False) > cost.effect_seconds(cfg, 128, 16, False)


# ----------------------------------------------------------- chunking changes no number
TINY = 1  # bytes: every chunk is then a single step, variant, copy or position


def _inputs(loaded, text="The cat sat on the mat because it was warm, and the dog slept."):
    return Inputs.encode(loaded, text)


def test_integrated_gradients_in_single_steps_match_one_batch(minilm, tiny_models_loaded):
    for loaded, target_args in ((minilm, dict(pooling="mean")),
                                (tiny_models_loaded["gpt2"], dict(position=5))):
        inputs = _inputs(loaded)
        target = make_target(loaded, inputs, **target_args)
        k = inputs.input_ids.shape[1]
        assert ig_chunk(loaded.cfg, k, 32, TINY) == 1 and ig_chunk(loaded.cfg, k, 32, 10**12) == 32
        one = integrated_gradients(loaded, target, inputs, "zero", 32, allowance=10**12)
        many = integrated_gradients(loaded, target, inputs, "zero", 32, allowance=TINY)
        np.testing.assert_allclose(many.attributions, one.attributions, rtol=1e-5, atol=1e-7)
        assert many.value == one.value and many.baseline_value == one.baseline_value


def test_occlusion_and_all_heads_one_variant_at_a_time_match(minilm):
    inputs = _inputs(minilm)
    target = make_target(minilm, inputs, pooling="mean")
    k = inputs.input_ids.shape[1]
    assert occlusion_chunk(minilm.cfg, k, TINY) == 1 < occlusion_chunk(minilm.cfg, k, 10**12)
    np.testing.assert_allclose(occlusion(minilm, target, inputs, "pad", allowance=TINY),
                               occlusion(minilm, target, inputs, "pad", allowance=10**12),
                               rtol=1e-5, atol=1e-7)
    small = all_heads(minilm, inputs, target, "zero", 16, "remove", allowance=TINY)
    big = all_heads(minilm, inputs, target, "zero", 16, "remove", allowance=10**12)
    np.testing.assert_allclose(small.occlusion, big.occlusion, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(small.ig.attributions, big.ig.attributions, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(small.head_rows, big.head_rows)


def test_sweep_one_head_at_a_time_matches(tiny_models_loaded):
    loaded = tiny_models_loaded["gpt2"]
    inputs = _inputs(loaded)
    n = inputs.input_ids.shape[1]
    assert sweep_chunk(loaded.cfg, n, TINY) == 1 < sweep_chunk(loaded.cfg, n, 10**12)
    small = importance_sweep(loaded, inputs, "mean", allowance=TINY)
    big = importance_sweep(loaded, inputs, "mean", allowance=10**12)
    assert small.keys() == big.keys() == {"tokens", "loss"}
    for name in big:
        np.testing.assert_allclose(small[name], big[name], rtol=1e-5, atol=1e-6)


def test_patching_grids_one_copy_at_a_time_match(tiny_models_loaded):
    loaded = tiny_models_loaded["gpt2"]
    clean = torch.arange(3, 13)
    corrupted = clean.clone()
    corrupted[4] = 40
    p = prepare_ids(loaded, clean, corrupted)
    assert patch_chunk(loaded.cfg, p.n_pos, TINY) == 1 < patch_chunk(loaded.cfg, p.n_pos)
    rounding = 1e-5 / abs(p.clean_value - p.corrupted_value)  # as in test_patching.rounding
    for grid in (residual_patching, head_patching):
        np.testing.assert_allclose(grid(p, allowance=TINY), grid(p, allowance=10**12),
                                   rtol=1e-5, atol=rounding)
