"""Score parts benchmark (issue 35), side by side in one run, on the bundled MiniLM:

  trace_512   one full trace of a 512-token text (lm.run, every hook point), for scale
  cell_cold   one cell's decomposition (analysis.score_parts.decompose_cell: the last layer,
              head 5, the last query against the middle key) on that fresh trace: its first
              reads of the trace recompute what the trace keeps lazily (z, the MLP outputs)
  cell_warm   the same cell again on the same trace (what a page pays for a second cell)
  trace_128   one full trace of a 128-token text
  map_128     the all-heads positional map (analysis.positional_heads.positional_map) on that
              fresh trace; the goal is map_128 ≤ 2 × trace_128

Each repeat makes fresh traces and times every step once, in order; one untimed warm-up
repeat first. Median and min reported, the map's ratio to the trace per repeat.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/bench_score_parts.py [--repeats 7] [--threads 2]
        [--out bench/out/score_parts.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

from bench_forward import machine_info, machine_line, text_of_length  # noqa: E402
from analysis.ablation import model_directory  # noqa: E402
from analysis.positional_heads import positional_map  # noqa: E402
from analysis.score_parts import decompose_cell  # noqa: E402
from model import load_model  # noqa: E402


def _clock(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def one_repeat(lm, long_text: str, short_text: str) -> dict[str, float]:
    times = {}
    times["trace_512"], trace = _clock(lambda: lm.run(long_text))
    n = trace.n_tokens
    cell = (lm.cfg.n_layers - 1, 5, n - 1, n // 2)
    times["cell_cold"], parts = _clock(lambda: decompose_cell(lm, trace, *cell))
    times["cell_warm"], _ = _clock(lambda: decompose_cell(lm, trace, *cell))
    assert abs(parts.total() - parts.score) <= 1e-5 * max(1.0, abs(parts.score))
    times["trace_128"], short = _clock(lambda: lm.run(short_text))
    times["map_128"], _ = _clock(lambda: positional_map(lm, short))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "score_parts.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    from transformers import AutoTokenizer

    lm = load_model("minilm")
    tokenizer = AutoTokenizer.from_pretrained(str(model_directory("minilm")))
    long_text, short_text = text_of_length(tokenizer, 512), text_of_length(tokenizer, 128)
    one_repeat(lm, long_text, short_text)  # warm-up
    runs = [one_repeat(lm, long_text, short_text) for _ in range(args.repeats)]
    names = list(runs[0])
    ratios = [r["map_128"] / r["trace_128"] for r in runs]
    machine = machine_info(args.threads)
    print(f"Machine: {machine_line(machine)}; load average before {load_before[0]:.1f}, "
          f"after {os.getloadavg()[0]:.1f}\n")
    print("| step | median ms | min ms |\n| --- | --- | --- |")
    for name in names:
        xs = [1000 * r[name] for r in runs]
        print(f"| {name} | {statistics.median(xs):.1f} | {min(xs):.1f} |")
    print(f"\nmap_128 / trace_128 per repeat: median {statistics.median(ratios):.2f}, "
          f"min {min(ratios):.2f}, max {max(ratios):.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "load_before": load_before,
                                    "load_after": os.getloadavg(), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
