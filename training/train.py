"""Train the project's own tiny transformers: the loop, the app's bounds, saving, the CLI.

The shipped models are reproduced, each with one command (seed fixed, one CPU thread so the
arithmetic is the same run to run; a few minutes at most on a laptop):

    python -m model.train --task induction --seed 0 --out weights/tiny-induction
    python -m model.train --task chars --seed 0 --out weights/tiny-chars
    python -m model.train --task reverse --seed 0 --out weights/tiny-reverse

The loop is AdamW with a short warm-up and a cosine decay, gradient clipping at 1, a fixed
seed for the weights and for the data, and a bound on both steps and seconds. Every
`snapshot_every` steps it evaluates the task's metric and photographs the attention on a
fixed example, so a learner can watch the patterns form. Runs started from the app (a
background thread each, the server's slots, one per browser) are ui/training_runs.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import os
import shutil
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .registry import OWN_MODEL_TYPE
from .tasks import TASKS, Task, make_task


@dataclass(frozen=True)
class TrainSettings:
    task: str = "induction"
    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 64
    steps: int = 1000
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int = 50
    seed: int = 0
    snapshot_every: int = 50
    max_seconds: float | None = None  # stop early (keeping the model) after this long

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)}, got {self.task!r}")
        if min(self.n_layers, self.n_heads, self.d_model, self.steps, self.batch_size,
               self.snapshot_every) < 1:
            raise ValueError("layers, heads, d_model, steps, batch size and snapshot interval "
                             "must all be at least 1")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of the number of "
                             f"heads ({self.n_heads})")


# The recipes of the shipped models (python -m model.train --task NAME uses these).
RECIPES = {
    "induction": TrainSettings(task="induction", n_layers=2, n_heads=4, d_model=64, steps=1500,
                               batch_size=32, lr=2e-3, snapshot_every=50),
    "chars": TrainSettings(task="chars", n_layers=2, n_heads=4, d_model=64, steps=2000,
                           batch_size=32, lr=2e-3, snapshot_every=100),
    "reverse": TrainSettings(task="reverse", n_layers=2, n_heads=4, d_model=64, steps=1500,
                             batch_size=64, lr=1e-3, snapshot_every=100),
}


@dataclass
class Snapshot:
    step: int
    seconds: float
    patterns: np.ndarray  # [layer, head, q_pos, k_pos], float16, on the task's probe
    metrics: dict[str, float]


@dataclass
class TrainResult:
    model: torch.nn.Module
    losses: list[float]  # one per step taken
    snapshots: list[Snapshot]
    seconds: float
    tokens: int  # tokens seen (for throughput)
    stopped: str | None = None  # "stop requested" / "time limit", or None when all steps ran


def learning_rate(step: int, s: TrainSettings) -> float:
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    progress = (step - s.warmup) / max(1, s.steps - s.warmup)
    return s.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))


def build(task: Task, s: TrainSettings) -> torch.nn.Module:
    """The task's model at the chosen size, initialised from the seed alone."""
    cfg = task.config(s.n_layers, s.n_heads, s.d_model)
    with torch.random.fork_rng(devices=[]):  # leave the global generator as we found it
        torch.manual_seed(s.seed)
        return task.build(cfg)


def train(task: Task, s: TrainSettings, on_step=None, on_snapshot=None,
          stop: threading.Event | None = None) -> TrainResult:
    """Train from scratch. on_step(step, loss) after each step; on_snapshot(Snapshot) at step 0,
    every snapshot_every steps and at the end. Setting `stop` ends the run after the current
    step; the model trained so far is returned either way."""
    model = build(task, s).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]  # matrices and embeddings
    other = [p for p in model.parameters() if p.dim() < 2]  # biases and norm gains
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": s.weight_decay},
                             {"params": other, "weight_decay": 0.0}], lr=s.lr, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(s.seed + 1)
    losses: list[float] = []
    snapshots: list[Snapshot] = []
    tokens, stopped, start = 0, None, time.perf_counter()

    def take_snapshot(step: int) -> None:
        model.eval()
        with torch.no_grad():
            snap = Snapshot(step, time.perf_counter() - start, task.snapshot(model),
                            task.evaluate(model))
        model.train()
        snapshots.append(snap)
        if on_snapshot is not None:
            on_snapshot(snap)

    take_snapshot(0)
    for step in range(s.steps):
        if stop is not None and stop.is_set():
            stopped = "stop requested"
            break
        if s.max_seconds is not None and time.perf_counter() - start > s.max_seconds:
            stopped = "time limit"
            break
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, s)
        batch = task.batch(gen, s.batch_size)
        loss = task.loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += task.n_tokens(batch)
        losses.append(loss.item())
        if on_step is not None:
            on_step(step + 1, losses[-1])
        if (step + 1) % s.snapshot_every == 0:
            take_snapshot(step + 1)
    if not snapshots or snapshots[-1].step != len(losses):
        take_snapshot(len(losses))
    model.eval()
    return TrainResult(model, losses, snapshots, time.perf_counter() - start, tokens, stopped)


@torch.no_grad()
def generate(model, chars: str, prompt: str, n_chars: int = 200, temperature: float = 0.8,
             seed: int = 0) -> str:
    """Continue `prompt` one character at a time, sampling from the model's softmax (divided
    by `temperature`; 0 takes the most likely character). Returns the new characters only."""
    index = {c: i for i, c in enumerate(chars)}
    ids = [index.get(c, index.get("?", 0)) for c in prompt] or [index.get("\n", 0)]
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_chars):
        window = torch.tensor([ids[-model.cfg.n_ctx:]])  # [1, pos]
        logits = model(window).logits[0, -1]  # [vocab]
        if temperature <= 0:
            nxt = int(logits.argmax())
        else:
            nxt = int(torch.multinomial((logits / temperature).softmax(-1), 1, generator=gen))
        ids.append(nxt)
        out.append(chars[nxt])
    return "".join(out)


# ------------------------------------------------------------------------ bounds (app)
# Bounds for runs started from the app; the training page states them (the number of runs
# at once is ui/training_runs.MAX_CONCURRENT_RUNS).
MAX_LAYERS, MAX_HEADS, MAX_D_MODEL = 4, 8, 128
MAX_STEPS, MAX_SECONDS = 3000, 180
MAX_SNAPSHOTS = 100  # per run; the interval grows for long runs
MAX_TEXT_CHARS = 50_000  # "your own text" is cut to this


def app_settings(task: str, n_layers: int, n_heads: int, d_model: int, steps: int,
                 snapshot_every: int, seed: int = 0) -> TrainSettings:
    """Settings for a run from the app: the task's recipe at the learner's size, bounded."""
    if n_layers > MAX_LAYERS or n_heads > MAX_HEADS or d_model > MAX_D_MODEL or \
            steps > MAX_STEPS:
        raise ValueError(f"at most {MAX_LAYERS} layers, {MAX_HEADS} heads, d_model "
                         f"{MAX_D_MODEL} and {MAX_STEPS} steps")
    every = max(snapshot_every, -(-steps // MAX_SNAPSHOTS))
    return dataclasses.replace(RECIPES[task], n_layers=n_layers, n_heads=n_heads,
                               d_model=d_model, steps=steps, snapshot_every=every, seed=seed,
                               warmup=min(50, max(1, steps // 10)), max_seconds=MAX_SECONDS)


# ---------------------------------------------------------------------------------- saving
def save_model(directory: Path, task: Task, model: torch.nn.Module, s: TrainSettings,
               metrics: dict[str, float] | None = None, **training) -> Path:
    """Write config.json, model.safetensors and tokenizer.json: loadable with load_model."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = {"model_type": OWN_MODEL_TYPE, "config": model.cfg.to_dict()}
    if task.encoder_decoder:
        config.update(architecture="encoder_decoder", decoder=model.dec_cfg.to_dict(),
                      special=task.special)
    config["training"] = {"settings": dataclasses.asdict(s), "metrics": metrics or {},
                          **training}
    (directory / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    os.chmod(directory / "model.safetensors", 0o644)  # safetensors writes it owner-only
    (directory / "tokenizer.json").write_text(json.dumps({"chars": task.chars, "unk": "?"},
                                                         ensure_ascii=False) + "\n",
                                              encoding="utf-8")
    return directory


SAVE_PREFIX = "attention-lab-model-"


def new_save_dir(max_age_hours: float = 12.0) -> Path:
    """A fresh temporary directory for a model trained in the app. Directories of earlier runs
    older than max_age_hours (sessions that ended without Reset) are removed first."""
    cutoff = time.time() - max_age_hours * 3600
    for old in Path(tempfile.gettempdir()).glob(SAVE_PREFIX + "*"):
        try:
            if old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:  # another process removed it first
            continue
    return Path(tempfile.mkdtemp(prefix=SAVE_PREFIX))


def model_archive(directory: Path) -> bytes:
    """A zip of a saved model directory (unzip it and load_model the folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            archive.write(Path(directory) / name, arcname=name)
    return buffer.getvalue()


def weights_file(directory: Path) -> bytes:
    """model.safetensors alone, with config.json and the vocabulary in its metadata."""
    from safetensors.torch import load_file, save

    directory = Path(directory)
    metadata = {"format": "pt",
                "attention_lab_config": (directory / "config.json").read_text("utf-8"),
                "tokenizer": (directory / "tokenizer.json").read_text("utf-8")}
    return save(load_file(str(directory / "model.safetensors")), metadata=metadata)


# ------------------------------------------------------------------------------------ CLI
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    command = f"python -m model.train --task {args.task} --seed {args.seed} --out {args.out}"
    save_model(args.out, task, result.model, recipe, final, command=command,
               first_losses=result.losses[:20], seconds=round(result.seconds, 1))
    size = (args.out / "model.safetensors").stat().st_size
    print(f"saved {args.out} ({size / 1e6:.2f} MB) after {len(result.losses)} steps in "
          f"{result.seconds:.1f} s, {result.tokens / result.seconds:,.0f} tokens/s")


if __name__ == "__main__":
    main()
