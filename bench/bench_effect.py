"""Effect benchmark (issue 16): the six token-importance methods on the bundled MiniLM, and the
same attributions through Captum as the reference, side by side in one run.

Target: the norm of MiniLM's mean-pooled sentence vector (analysis/effect_target.py). Rows:

  all six (N tokens)   analysis.effect.all_heads: one traced run (attention, rollout,
                       attention norm of every head), gradient × input, integrated gradients
                       (64 steps at 128 tokens; at 512 tokens the app's bound, 16 steps),
                       occlusion (remove each token; at 512 tokens beyond the app's bound of
                       256 tokens, so lifted for this row only) and every correlation
  ig batched / ig 64 separate   integrated gradients, 64 Gauss–Legendre steps in one batch
                       (chunk=64), against one forward + backward pass per step (the same
                       numbers); "ours" below runs in the chunks that fit the default
                       working-memory allowance (analysis/cost.py)
  captum ...           captum.attr IntegratedGradients (method "gausslegendre", the same
                       points, internal_batch_size = steps), InputXGradient, and Occlusion
                       over the token-embedding input with a one-token window and the [MASK]
                       embedding as the baseline (= our occlusion "mask" mode), each through
                       the same target function; max |ours − theirs| over the tokens

  floor (--floor)      the least time the 128-token run can take on this machine: the
                       matrix-multiply FLOPs each method really executes (counted by
                       torch.utils.flop_counter, backward passes included) divided by the
                       best fp32 matrix-multiply rate measured here, in the same run, on the
                       model's own shapes ([tokens, 384] × [384, 1536] and back). Nothing else
                       (softmax, GELU, norms, memory traffic) is counted, so the real time can
                       only be higher.

Each variant: one warm-up call, then `--repeats` calls; median and min. Other jobs may share
the machine: the load average is recorded before and after.

    HF_HUB_OFFLINE=1 python bench/bench_effect.py [--repeats 3] [--threads 2] [--skip-512]
        [--interleaved] [--floor]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import analysis.effect as effect  # noqa: E402
from analysis.ablation import Inputs, model_directory  # noqa: E402
from analysis.effect import all_heads, occlusion  # noqa: E402
from analysis.effect_target import make_target, score, special_token_id  # noqa: E402
from analysis.gradients import (  # noqa: E402
    gauss_legendre, gradient_x_input, integrated_gradients, token_embeddings,
)
from bench_forward import machine_info, machine_line, text_of_length  # noqa: E402
from model import load_model  # noqa: E402
from timing import timed  # noqa: E402


def ig_separate(lm, target, inputs, steps: int) -> np.ndarray:
    """Integrated gradients from zeros, one forward + backward pass per step."""
    args = (inputs.input_ids, inputs.attention_mask, inputs.token_type_ids)
    x = token_embeddings(lm, inputs)  # [1, k, d]
    alphas, weights = gauss_legendre(steps)
    total = torch.zeros_like(x[0])
    for a, w in zip(alphas.tolist(), weights.tolist()):
        point = (a * x).requires_grad_(True)
        with torch.enable_grad():
            (grad,) = torch.autograd.grad(score(lm, target, *args, tok=point).sum(), point)
        total += w * grad[0]
    return (x[0] * total).sum(-1).double().numpy()


def captum_runs(lm, target, inputs, steps: int) -> dict:
    """Captum's attributions over the token-embedding input, summed per token."""
    from captum.attr import InputXGradient, IntegratedGradients, Occlusion

    args = (inputs.input_ids, inputs.attention_mask, inputs.token_type_ids)
    x = token_embeddings(lm, inputs)  # [1, k, d]
    k, d = x.shape[1:]

    def forward(tok):  # [b, k, d] -> [b]
        return score(lm, target, *args, tok=tok)

    mask = token_embeddings(lm, inputs, special_token_id(lm, "mask"))  # [1, k, d]
    return {
        "integrated_gradients": lambda: IntegratedGradients(forward).attribute(
            x, baselines=torch.zeros_like(x), n_steps=steps, method="gausslegendre",
            internal_batch_size=steps)[0].sum(-1).double().numpy(),
        "gradient_x_input": lambda: InputXGradient(forward).attribute(
            x.clone().requires_grad_(True))[0].sum(-1).detach().double().numpy(),
        # every element of a token's window gets that window's change: read one of them
        "occlusion_mask": lambda: Occlusion(forward).attribute(
            x, sliding_window_shapes=(1, d), strides=(1, d), baselines=mask,
            perturbations_per_eval=min(k, 64))[0, :, 0].double().numpy(),
    }


def ours(lm, target, inputs, steps: int) -> dict:
    return {
        "integrated_gradients": lambda: integrated_gradients(lm, target, inputs, "zero",
                                                             steps).attributions,
        "gradient_x_input": lambda: gradient_x_input(lm, target, inputs),
        "occlusion_mask": lambda: occlusion(lm, target, inputs, "mask"),
    }


def row(name: str, times: list[float], note: str = "") -> str:
    return (f"| {name} | {statistics.median(times):.3f} | {min(times):.3f} | {note} |")


def bench_all_six(lm, tokenizer, n: int, steps: int, repeats: int) -> str:
    inputs = Inputs.encode(lm, text_of_length(tokenizer, n))
    assert inputs.input_ids.shape[1] == n
    target = make_target(lm, inputs)
    lifted = n > effect.MAX_OCCLUSION_TOKENS
    saved = effect.MAX_OCCLUSION_TOKENS
    if lifted:  # this row only: measure what the app refuses to run
        effect.MAX_OCCLUSION_TOKENS = n
    try:
        times, every = timed(lambda: all_heads(lm, inputs, target, "zero", steps), repeats)
    finally:
        effect.MAX_OCCLUSION_TOKENS = saved
    parts = {"gradient × input": lambda: gradient_x_input(lm, target, inputs),
             f"integrated gradients, {steps} steps": lambda: integrated_gradients(
                 lm, target, inputs, "zero", steps)}
    lines = [row(f"all six methods, {n} tokens, IG {steps} steps", times,
                 ("occlusion bound lifted for this row; " if lifted else "")
                 + f"IG gap {every.ig.gap:+.1e}")]
    for name, fn in parts.items():
        lines.append(row(f"  of which {name}, {n} tokens", timed(fn, repeats)[0]))
    return "\n".join(lines)


def bench_ig_and_captum(lm, tokenizer, repeats: int) -> str:
    inputs = Inputs.encode(lm, text_of_length(tokenizer, 128))
    target = make_target(lm, inputs)
    t_batch, batched = timed(lambda: integrated_gradients(lm, target, inputs, "zero", 64,
                                                          chunk=64).attributions, repeats)
    t_sep, separate = timed(lambda: ig_separate(lm, target, inputs, 64), repeats)
    lines = [row("IG 64 steps, one batch (128 tokens)", t_batch),
             row("IG 64 steps, 64 separate passes (128 tokens)", t_sep,
                 f"max abs diff to batched {np.abs(batched - separate).max():.1e}")]
    mine, theirs = ours(lm, target, inputs, 64), captum_runs(lm, target, inputs, 64)
    for name in mine:
        t_ours, a = timed(mine[name], repeats)
        t_cap, b = timed(theirs[name], repeats)
        diff = float(np.abs(a - b).max())
        lines.append(row(f"ours: {name} (128 tokens)", t_ours,
                         f"max abs diff to Captum {diff:.1e} ({'≤' if diff <= 1e-4 else '>'} "
                         "1e-4)"))
        lines.append(row(f"Captum: {name} (128 tokens)", t_cap,
                         f"ours / Captum time {statistics.median(t_ours) / statistics.median(t_cap):.2f}"))
    return "\n".join(lines)


def gemm_rate(repeats: int = 5) -> float:
    """The best fp32 matrix-multiply rate (FLOP/s) on MiniLM's MLP shapes, 128 × 127 rows."""
    a, w1, w2 = torch.randn(128 * 127, 384), torch.randn(384, 1536), torch.randn(1536, 384)
    (a @ w1) @ w2  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        (a @ w1) @ w2
        best = min(best, time.perf_counter() - start)
    return 2 * 2 * a.shape[0] * 384 * 1536 / best


def counted_flops(fn) -> int:
    """Matrix-multiply FLOPs that fn executes, forward and backward: every mm, addmm, bmm and
    baddbmm dispatched, 2 × m × n × k each. (torch.utils.flop_counter's FlopCounterMode
    cannot follow torch.autograd.grad, which the gradient methods use.)"""
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    total = [0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            packet = func._overloadpacket
            if packet in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
                a, b = args[-2], args[-1]  # [.., m, k] @ [.., k, n]
                total[0] += 2 * a.numel() * b.shape[-1]
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return total[0]


def bench_floor(lm, tokenizer, repeats: int) -> str:
    """Each method's counted FLOPs at 128 tokens, the least time they need at this machine's
    best measured rate, and the time they really take."""
    inputs = Inputs.encode(lm, text_of_length(tokenizer, 128))
    target = make_target(lm, inputs)
    rate = gemm_rate()
    parts = {"occlusion (remove each token: 128 runs of 127 tokens)":
             lambda: occlusion(lm, target, inputs),
             "integrated gradients, 64 steps": lambda: integrated_gradients(
                 lm, target, inputs, "zero", 64),
             "integrated gradients, 16 steps": lambda: integrated_gradients(
                 lm, target, inputs, "zero", 16),
             "gradient × input": lambda: gradient_x_input(lm, target, inputs),
             "all six methods, IG 64 steps": lambda: all_heads(lm, inputs, target, "zero", 64)}
    lines = [f"| best fp32 matrix multiply here | {rate / 1e9:.0f} GFLOP/s | | |"]
    for name, fn in parts.items():
        flops = counted_flops(fn)
        times = timed(fn, repeats)[0]
        lines.append(f"| {name} | {flops / 1e9:.0f} GFLOP | ≥ {flops / rate:.2f} s | "
                     f"{statistics.median(times):.2f} s |")
    return "\n".join(lines)


def bench_interleaved(lm, tokenizer, rounds: int) -> str:
    """At 128 tokens: all six, IG batched and IG as 64 separate passes, one of each per round
    in a rotated order, so a burst of load from other jobs falls on all of them alike."""
    inputs = Inputs.encode(lm, text_of_length(tokenizer, 128))
    target = make_target(lm, inputs)
    runs = {"all six methods, 128 tokens, IG 64 steps (interleaved)":
            lambda: all_heads(lm, inputs, target, "zero", 64),
            "IG 64 steps, one batch (interleaved)":
            lambda: integrated_gradients(lm, target, inputs, "zero", 64),
            "IG 64 steps, 64 separate passes (interleaved)":
            lambda: ig_separate(lm, target, inputs, 64)}
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for fn in runs.values():
        fn()  # warm-up
    for i in range(rounds):
        for name in names[i % len(names):] + names[: i % len(names)]:
            start = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - start)
    return "\n".join(row(name, t) for name, t in times.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-512", action="store_true")
    parser.add_argument("--floor", action="store_true",
                        help="only the floor: counted FLOPs over the measured rate, 128 tokens")
    parser.add_argument("--interleaved", action="store_true",
                        help="only the interleaved 128-token rows (all six, IG batched/separate)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    from transformers import AutoTokenizer

    lm = load_model("minilm")
    tokenizer = AutoTokenizer.from_pretrained(str(model_directory("minilm")))
    import captum

    print(f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. "
          f"Machine: {machine_line(machine_info(args.threads))}, captum {captum.__version__}.")
    print(f"uptime before: {uptime_before}\n")
    if args.floor:
        print("| method, 128 tokens | matrix-multiply work | least time here | measured, "
              "median |\n| --- | ---: | ---: | ---: |")
        print(bench_floor(lm, tokenizer, args.repeats), flush=True)
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"\nuptime after:  {uptime}")
        return
    print("| what | median s | min s | notes |\n| --- | ---: | ---: | --- |", flush=True)
    if args.interleaved:
        print(bench_interleaved(lm, tokenizer, args.repeats), flush=True)
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"\nuptime after:  {uptime}")
        return
    print(bench_all_six(lm, tokenizer, 128, 64, args.repeats), flush=True)
    print(bench_ig_and_captum(lm, tokenizer, args.repeats), flush=True)
    if not args.skip_512:  # the slowest last: one repeat after the warm-up
        print(bench_all_six(lm, tokenizer, 512, 16, max(1, args.repeats - 2)), flush=True)
    uptime_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nuptime after:  {uptime_after}")


if __name__ == "__main__":
    main()
