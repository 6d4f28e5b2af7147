"""Encoder–decoder patching's plan (analysis/cost.py `seq2seq_patching_plan`) against a real
run at t5-small's shape (random weights, bench/bench_seq2seq_lab.py's folder): the planned
peak working memory and seconds, and the measured rise of the process's peak RSS and the
wall time of prepare + every grid, at the allowance given (chunks fitted to it).

    HF_HUB_OFFLINE=1 python bench/bench_seq2seq_patching_memory.py [--mb 512] [--out 20]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests", ROOT / "bench"):
    sys.path.insert(0, str(extra))

import torch  # noqa: E402

from bench_forward import machine_info, machine_line  # noqa: E402
from bench_seq2seq_lab import CORRUPT, SOURCE, _folder  # noqa: E402


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _added(run) -> tuple[int, float]:
    """(the most the RSS rose above where it started while run() ran, seconds): sampled every
    2 ms, as tests/unit/test_analysis_cost.py measures the other analyses."""
    base, peak, done = _rss(), [0], [False]

    def sample() -> None:
        while not done[0]:
            peak[0] = max(peak[0], _rss())
            time.sleep(0.002)

    thread = threading.Thread(target=sample)
    thread.start()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    done[0] = True
    thread.join()
    return max(peak[0], _rss()) - base, seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--out", type=int, default=20)
    parser.add_argument("--last", action="store_true",
                        help="read the metric at the last decoder position (the plan's case)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from analysis.cost import seq2seq_patching_plan
    from analysis.seq2seq_patching import (decoder_head_patching, decoder_residual_patching,
                                           encoder_residual_patching, prepare_seq2seq)
    from model.loading import load_model

    allowance = args.mb * 2**20
    with tempfile.TemporaryDirectory() as tmp:
        lm = load_model(str(_folder(Path(tmp) / "t5")), device="cpu")
    a, b = lm.encode(SOURCE).input_ids[0], lm.encode(CORRUPT).input_ids[0]
    dec = lm.run(SOURCE).decoder_ids[0][:args.out]
    plan = seq2seq_patching_plan(lm.cfg, lm.model.dec_cfg, a.numel(), dec.numel(), allowance)

    def run(a, b, dec, most) -> None:
        p = prepare_seq2seq(lm, a, b, dec, position=-1 if args.last else None)
        encoder_residual_patching(p, allowance=most)
        decoder_head_patching(p, allowance=most)
        decoder_residual_patching(p, allowance=most)

    run(a[:8], b[:8], dec[:3], plan.most)  # warm up: the allocator's first blocks, lazy inits
    gc.collect()
    added, seconds = _added(lambda: run(a, b, dec, plan.most))
    print(machine_line(machine_info(1)))
    print(f"source {a.numel()} tokens, output {dec.numel()}, allowance {args.mb} MB, metric "
          f"at {'the last decoder position' if args.last else 'the default position'}")
    print(f"plan: most {plan.most / 2**20:.1f} MB, least {plan.least / 2**20:.1f} MB, "
          f"{plan.seconds:.1f} s")
    print(f"measured: RSS rose at most {added / 2**20:.1f} MB, {seconds:.1f} s")


if __name__ == "__main__":
    main()
