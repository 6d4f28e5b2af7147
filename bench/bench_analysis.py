"""Analysis benchmark: the head-statistics grid and a full one-head-at-a-time ablation sweep,
on the bundled MiniLM at a fixed number of tokens ([CLS] and [SEP] included).

After one warm-up call of each, every repeat calls each variant once, in an order rotated
by one per repeat (so load from other jobs falls on all of them); median and min reported:

  forward          one traced run keeping the attention patterns (what the grid needs)
  stats            every statistic of every head from that trace (analysis.head_stats.trace_totals)
  stats_grid       the same plus the plotly grid figure (viz.heads.head_grid) and its JSON
  sweep_batched    importance_sweep, zero ablation: the 12 heads of a layer as one batch,
                   run from the clean input of that layer (analysis.ablation); the layer's
                   attention runs once and each copy adds its head's delta (issue 15)
  sweep_previous   the same with reuse_attention=False: every copy recomputes that layer's
                   attention (the sweep before issue 15)
  sweep_one_by_one the same as sweep_previous with chunk=1: one pass per head
  sweep_naive      72 full forward passes, one per head (run_ablated), as a baseline
  sweep_mean       importance_sweep with mean ablation, batched

The batched sweep is checked against the naive one (max abs difference of every metric).
With --app, the ablation page's "Measure all 72 heads" button is also clicked once in
AppTest (the real page script, a fresh process's first sweep) and timed to the end of the
rerun that shows the grid.

    HF_HUB_OFFLINE=1 python bench/bench_analysis.py [--tokens 128] [--repeats 5]
        [--threads 2] [--app] [--out bench/out/analysis.json]

Prints a Markdown table; writes the raw times and the machine to --out.
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

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench_forward import machine_info, machine_line, text_of_length  # noqa: E402
from model import load_model  # noqa: E402
from analysis.ablation import (  # noqa: E402
    Inputs, effects, forward, importance_sweep, model_directory, run_ablated, sentence_pooling,
)
from analysis.head_stats import trace_totals  # noqa: E402
from viz.heads import head_grid  # noqa: E402

LABELS = {
    "forward": "forward, keeping attention patterns (reference)",
    "stats": "head statistics: all 8 statistics × 72 heads",
    "stats_grid": "head statistics + grid figure (plotly JSON)",
    "sweep_batched": "ablation sweep, zero, 72 heads, batched, the layer's attention once",
    "sweep_previous": "ablation sweep, zero, 72 heads, batched, every copy recomputes it",
    "sweep_one_by_one": "ablation sweep, zero, 72 heads, one pass per head",
    "sweep_naive": "72 full forward passes, one per removed head (baseline)",
    "sweep_mean": "ablation sweep, mean, 72 heads, batched",
}


def patterns(name: str) -> bool:
    return name.endswith("attn.hook_pattern")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--app", action="store_true", help="also time the page's button")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "analysis.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()

    from transformers import AutoTokenizer

    lm = load_model("minilm")
    directory = model_directory("minilm")
    text = text_of_length(AutoTokenizer.from_pretrained(str(directory)), args.tokens)
    pooling = sentence_pooling(directory)
    inputs = Inputs.encode(lm, text)
    assert inputs.input_ids.shape[1] == args.tokens
    trace = lm.run(text, keep=patterns)

    def stats_grid():
        means = trace_totals(trace).means()
        return head_grid(means["entropy"], "Entropy", "bits").to_json()

    def naive() -> dict[str, np.ndarray]:
        clean = forward(lm, inputs)
        rows = [effects(clean, run_ablated(lm, inputs, [(layer, head)]), inputs, pooling)
                for layer in range(lm.cfg.n_layers) for head in range(lm.cfg.n_heads)]
        return {k: np.array([float(r[k][0]) for r in rows]).reshape(lm.cfg.n_layers, -1)
                for k in rows[0]}

    runs = {
        "forward": lambda: lm.run(text, keep=patterns),
        "stats": lambda: trace_totals(trace).means(),
        "stats_grid": stats_grid,
        "sweep_batched": lambda: importance_sweep(lm, inputs, "zero", pooling),
        "sweep_previous": lambda: importance_sweep(lm, inputs, "zero", pooling,
                                                   reuse_attention=False),
        "sweep_one_by_one": lambda: importance_sweep(lm, inputs, "zero", pooling, chunk=1,
                                                     reuse_attention=False),
        "sweep_naive": naive,
        "sweep_mean": lambda: importance_sweep(lm, inputs, "mean", pooling),
    }
    # Interleaved: every repeat runs each variant once, in an order rotated by one each time,
    # so a burst of load from other jobs on the machine falls on all of them alike.
    for fn in runs.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    results: dict[str, object] = {}
    names = list(runs)
    for repeat in range(args.repeats):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:
            start = time.perf_counter()
            results[name] = runs[name]()
            times[name].append(time.perf_counter() - start)
    batched, reference = results["sweep_batched"], results["sweep_naive"]
    diff = max(float(np.abs(batched[k] - reference[k]).max()) for k in batched)

    app_s = app_button(text) if args.app else None
    machine = machine_info(args.threads)
    load = os.getloadavg()
    print(f"MiniLM (6 layers × 12 heads), {args.tokens} tokens; {machine_line(machine)}; "
          f"load average before {load_before[0]:.2f}, after {load[0]:.2f}")
    print(f"batched sweep vs 72 full runs: max abs difference {diff:.1e}\n")
    print("| what | median (s) | min (s) | runs |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        print(f"| {LABELS[name]} | {statistics.median(ts):.3f} | {min(ts):.3f} | {len(ts)} |")
    if app_s is not None:
        print(f"| the page: click \"Measure all 72 heads\" → grid shown (AppTest, first sweep) "
              f"| {app_s:.3f} | {app_s:.3f} | 1 |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"tokens": args.tokens, "machine": machine, "times": times,
                                    "sweep_max_abs_diff": diff, "app_button_s": app_s,
                                    "load_average": [load_before, load]}, indent=2))


def app_button(text: str) -> float:
    """Seconds from clicking the ablation page's sweep button to the end of that rerun."""
    from streamlit.testing.v1 import AppTest

    sys.path.insert(0, str(ROOT / "tests"))
    from page_links import switch

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.session_state["sb_text"] = text
    switch(at, "ablation").run()
    button = at.button(key="abl_sweep_btn")
    start = time.perf_counter()
    button.click().run()
    took = time.perf_counter() - start
    if at.exception or "abl_grid" not in [el.key for el in at.get("plotly_chart")]:
        raise RuntimeError(f"the sweep did not show its grid: {at.exception}")
    return took


if __name__ == "__main__":
    main()
