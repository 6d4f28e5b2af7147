"""Train the project's own tiny transformers: the settings, the recipes and the loop.

The shipped models are reproduced, each with one command (seed fixed, one CPU thread so the
arithmetic is the same run to run; a few minutes at most on a laptop):

    python -m training --task induction --seed 0 --out weights/tiny-induction
    python -m training --task chars --seed 0 --out weights/tiny-chars
    python -m training --task reverse --seed 0 --out weights/tiny-reverse
    python -m training --task english --seed 0 --out weights/tiny-words  (up to 30 minutes)

The loop is AdamW with a short warm-up and a cosine decay, gradient clipping at 1, a fixed
seed for the weights and for the data, and a bound on both steps and seconds. Every
`snapshot_every` steps it evaluates the task's metric and photographs the attention on a
fixed example, so a learner can watch the patterns form. The save format is saving.py, the
command line __main__.py; runs started from the app (a background thread each, the server's
slots, one per browser, the app's bounds) are ui/training_runs.py.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from .tasks import TASKS, Task


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


# The recipes of the shipped models (python -m training --task NAME uses these).
RECIPES = {
    "induction": TrainSettings(task="induction", n_layers=2, n_heads=4, d_model=64, steps=1500,
                               batch_size=32, lr=2e-3, snapshot_every=50),
    "chars": TrainSettings(task="chars", n_layers=2, n_heads=4, d_model=64, steps=2000,
                           batch_size=32, lr=2e-3, snapshot_every=100),
    "reverse": TrainSettings(task="reverse", n_layers=2, n_heads=4, d_model=64, steps=1500,
                             batch_size=64, lr=1e-3, snapshot_every=100),
    "english": TrainSettings(task="english", n_layers=3, n_heads=8, d_model=128, steps=6000,
                             batch_size=32, lr=3e-3, snapshot_every=500),
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
