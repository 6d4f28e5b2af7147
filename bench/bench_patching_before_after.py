"""The patching grids before and after a change to `model/` and `analysis/`: the residual and
head grids of a decoder (`analysis/patching.py`) and of an encoder–decoder
(`analysis/seq2seq_patching.py`), timed with the code of an earlier commit and of this
worktree taking turns repeat by repeat (each turn a fresh process, so neither version warms
the other's caches), so a machine shared with other jobs slows both alike. Each turn reports
the CPU time of this thread (time.thread_time; waiting for a core does not inflate it) and
the wall time of `--calls` calls after one untimed call, and the grids' sum, which must
agree.

    HF_HUB_OFFLINE=1 python bench/bench_patching_before_after.py --before 9e42f58
        [--repeats 7] [--calls 10] [--model tiny-words] [--seq2seq tiny-reverse]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECODER_TEXTS = ("When Mary and John went to the shop, John gave a drink to",
                 "When Mary and John went to the shop, Mary gave a drink to")
SEQ2SEQ_TEXTS = ("planet", "plante")

ONE_TURN = r"""
import json, sys, time, torch
torch.set_num_threads(1)
from model import load_model
kind, name, clean, corrupt, calls = sys.argv[1:6]
lm = load_model(name, device="cpu")
if kind == "decoder":
    from analysis.patching import head_patching, prepare, residual_patching
    p = prepare(lm, clean, corrupt)
    grids = lambda: (residual_patching(p), head_patching(p))
else:
    from analysis.seq2seq_patching import (decoder_head_patching, decoder_residual_patching,
                                           encoder_residual_patching, prepare_seq2seq)
    a, b = lm.encode(clean).input_ids[0], lm.encode(corrupt).input_ids[0]
    p = prepare_seq2seq(lm, a, b, lm.run(clean).decoder_ids[0])
    grids = lambda: (encoder_residual_patching(p), *decoder_head_patching(p),
                     decoder_residual_patching(p))
grids()
c0, w0 = time.thread_time(), time.perf_counter()
for _ in range(int(calls)):
    out = grids()
print(json.dumps({"cpu": time.thread_time() - c0, "wall": time.perf_counter() - w0,
                  "sum": float(sum(g.sum() for g in out))}))
"""


def tree_at(rev: str) -> Path:
    """model/, analysis/ and weights/ as they were at git revision `rev`, in a fresh folder."""
    into = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "model", "analysis",
                              "weights"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def turn(tree: Path, kind: str, name: str, texts: tuple[str, str], calls: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", ONE_TURN, kind, name, *texts,
                          str(calls)], cwd=tree,
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", required=True, help="git revision of the earlier code")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--calls", type=int, default=10, help="calls of all the grids per turn")
    p.add_argument("--model", default="tiny-words")
    p.add_argument("--seq2seq", default="tiny-reverse")
    args = p.parse_args(argv)
    trees = {"before": tree_at(args.before), "after": ROOT}
    for kind, name, texts in (("decoder", args.model, DECODER_TEXTS),
                              ("seq2seq", args.seq2seq, SEQ2SEQ_TEXTS)):
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for r in range(args.repeats):
            for label in (("before", "after") if r % 2 == 0 else ("after", "before")):
                runs[label].append(turn(trees[label], kind, name, texts, args.calls))
        sums = {label: {round(t["sum"], 9) for t in got} for label, got in runs.items()}
        print(f"{name} ({kind}): {args.repeats} repeats, 1 thread, load average "
              f"{os.getloadavg()[0]:.1f}; grids' sum before {sums['before']}, after "
              f"{sums['after']}")
        for what in ("cpu", "wall"):
            before = [t[what] for t in runs["before"]]
            after = [t[what] for t in runs["after"]]
            ratios = sorted(a / b for a, b in zip(after, before))
            print(f"| {name} | {what} | {1000 * statistics.median(before):.0f} | "
                  f"{1000 * statistics.median(after):.0f} | {statistics.median(ratios):.3f} | "
                  f"{ratios[0]:.2f}–{ratios[-1]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
