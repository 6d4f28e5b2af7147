"""Training benchmark: how fast induction heads emerge, and training throughput per model.

1. Time to induction: the shipped tiny-induction recipe (python -m training --task
   induction) trained from scratch, evaluated every 10 steps on fresh repeated sequences;
   the clock stops at the first evaluation where the best layer-1 head's induction score is
   at least 0.5 (the test threshold). Wall-clock seconds from the first step, evaluations
   included, on --threads CPU threads; one run per seed. The goal (issue 6) is 60 s on
   2 CPU cores.
2. Throughput: tokens per second of each shipped recipe (forward, backward, AdamW step,
   batch sampling), timed over steps 11..N so start-up is left out. Tokens are the model's
   input tokens (for the encoder-decoder: source plus decoder tokens).

    python bench/bench_training.py [--seeds 0 1 2] [--steps 100] [--threads 2]
        [--out bench/out/training.json]

Prints a Markdown table for BENCHMARKS.md; writes the raw numbers to --out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from training import train as tr  # noqa: E402
from training.tasks import make_task  # noqa: E402

GOAL_SECONDS = 60.0
THRESHOLD = 0.5


def time_to_induction(seed: int) -> dict:
    """The shipped recipe (its learning-rate schedule included), stopped once it crosses."""
    recipe = dataclasses.replace(tr.RECIPES["induction"], seed=seed, snapshot_every=10)
    stop = threading.Event()
    crossed: dict = {}

    def on_snapshot(snap: tr.Snapshot) -> None:
        score = snap.metrics["induction score"]
        if score >= THRESHOLD and not crossed:
            crossed.update(step=snap.step, seconds=snap.seconds, score=score)
            stop.set()

    result = tr.train(make_task("induction"), recipe, on_snapshot=on_snapshot, stop=stop)
    return {"seed": seed, **(crossed or {"step": None, "seconds": None,
                                         "score": result.snapshots[-1].metrics[
                                             "induction score"]})}


def throughput(task_key: str, steps: int) -> dict:
    recipe = dataclasses.replace(tr.RECIPES[task_key], steps=steps, snapshot_every=10 * steps)
    times: list[float] = []
    result = tr.train(make_task(task_key), recipe,
                      on_step=lambda step, loss: times.append(time.perf_counter()))
    per_step = result.tokens / len(result.losses)
    skip = min(10, steps // 2)
    seconds = times[-1] - times[skip - 1]
    return {"task": task_key, "steps_timed": steps - skip, "tokens_per_step": per_step,
            "seconds": seconds, "tokens_per_s": per_step * (steps - skip) / seconds,
            "steps_per_s": (steps - skip) / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "training.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runs = [time_to_induction(seed) for seed in args.seeds]
    rates = [throughput(key, args.steps) for key in ("induction", "chars", "reverse")]
    times = [r["seconds"] for r in runs if r["seconds"] is not None]
    median = statistics.median(times) if len(times) == len(runs) else None
    print(f"## Training ({args.threads} threads, {os.cpu_count()} CPUs, torch "
          f"{torch.__version__})\n")
    print("| measure | goal | measured |\n| --- | --- | --- |")
    for r in runs:
        shown = (f"{r['seconds']:.1f} s (step {r['step']}, score {r['score']:.2f})"
                 if r["seconds"] is not None else f"not reached (score {r['score']:.2f})")
        print(f"| induction score ≥ {THRESHOLD}, seed {r['seed']} | ≤ {GOAL_SECONDS:.0f} s | "
              f"{shown} |")
    if median is not None:
        verdict = "met" if median <= GOAL_SECONDS else "not met"
        print(f"| induction score ≥ {THRESHOLD}, median | ≤ {GOAL_SECONDS:.0f} s | "
              f"{median:.1f} s ({verdict}) |")
    names = {"induction": "tiny-induction", "chars": "tiny-chars", "reverse": "tiny-reverse"}
    for r in rates:
        print(f"| training throughput, {names[r['task']]} | — | {r['tokens_per_s']:,.0f} "
              f"tokens/s ({r['steps_per_s']:.1f} steps/s, {r['tokens_per_step']:.0f} "
              "tokens/step) |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "when": datetime.now(timezone.utc).isoformat(), "threads": args.threads,
        "cpus": os.cpu_count(), "machine": platform.platform(), "torch": torch.__version__,
        "goal_seconds": GOAL_SECONDS, "time_to_induction": runs, "throughput": rates,
    }, indent=1))


if __name__ == "__main__":
    main()
