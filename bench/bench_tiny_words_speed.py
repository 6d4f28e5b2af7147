"""tiny-words beside tiny-chars in the decoder lab (issue 36): the time per generated token and
per patching grid (the residual stream's and every head's), side by side in one run.

Each model gets a prompt of its own kind and a corrupted twin of the same length:
  tiny-words  "When Mary and John went to the store, John gave a drink to"   (giver swapped)
  tiny-chars  a sentence of its own, with one letter changed
Generation: 20 greedy tokens after the prompt (a full pass per step, as the page does); the time
per token is the call's time / 20. Patching: `prepare` (both runs kept) and then the grid, as
the patching page runs them. The calls take turns (`timing.interleaved`), after one warm-up
round; medians and minimums in ms. torch on one thread, as a hosted server runs it.

    HF_HUB_OFFLINE=1 python bench/bench_tiny_words_speed.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import torch  # noqa: E402

from analysis.generation import generate_ids, prompt_window  # noqa: E402
from analysis.patching import head_patching, prepare, residual_patching  # noqa: E402
from model import load_model  # noqa: E402
from timing import interleaved  # noqa: E402

N_NEW = 20
PROMPTS = {
    "tiny-words": ("When Mary and John went to the store, John gave a drink to",
                   "When Mary and John went to the store, Mary gave a drink to"),
    "tiny-chars": ("attention lets each token look at the others",
                   "attention lets each token look at the athers"),
}


def calls(name: str) -> dict:
    loaded = load_model(name)
    clean, corrupted = PROMPTS[name]
    ids, _ = prompt_window(loaded, clean)
    return {
        f"{name}: {N_NEW} tokens": lambda: generate_ids(loaded, ids, N_NEW),
        f"{name}: residual grid": lambda: residual_patching(prepare(loaded, clean, corrupted)),
        f"{name}: head grid": lambda: head_patching(prepare(loaded, clean, corrupted)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    every = calls("tiny-words") | calls("tiny-chars")
    before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    times = interleaved(every, args.repeats, warmup=1)
    after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} (1 thread)")
    print(f"before: {before}\nafter:  {after}\n")
    print("| what | median ms | min ms |\n| --- | ---: | ---: |")
    for label, seconds in times.items():
        per = N_NEW if "tokens" in label else 1
        what = label.replace(f"{N_NEW} tokens", "one generated token") if per > 1 else label
        print(f"| {what} | {1000 * statistics.median(seconds) / per:.1f} "
              f"| {1000 * min(seconds) / per:.1f} |")


if __name__ == "__main__":
    main()
