"""python -m training --task NAME --seed 0 --out DIR: rebuild a shipped model (see train.py)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import torch

from .saving import save_model
from .tasks import make_task
from .train import RECIPES, Snapshot, train
from . import train as train_module


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=train_module.__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=sorted(RECIPES), required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, help="override the recipe's number of steps")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1 keeps the run bit-for-bit reproducible)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    recipe = dataclasses.replace(RECIPES[args.task], seed=args.seed)
    if args.steps:
        recipe = dataclasses.replace(recipe, steps=args.steps)
    task = make_task(args.task)

    def report(snap: Snapshot) -> None:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in snap.metrics.items())
        print(f"step {snap.step:5d}  {snap.seconds:6.1f} s  {shown}", flush=True)

    result = train(task, recipe, on_snapshot=report)
    final = result.snapshots[-1].metrics
    command = f"python -m training --task {args.task} --seed {args.seed} --out {args.out}"
    save_model(args.out, task, result.model, recipe, final, command=command,
               first_losses=result.losses[:20], seconds=round(result.seconds, 1))
    size = (args.out / "model.safetensors").stat().st_size
    print(f"saved {args.out} ({size / 1e6:.2f} MB) after {len(result.losses)} steps in "
          f"{result.seconds:.1f} s, {result.tokens / result.seconds:,.0f} tokens/s")


if __name__ == "__main__":
    main()
