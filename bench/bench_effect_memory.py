"""Working memory of the effect page's "Measure every token" (issue 25): the peak resident
memory one click adds, and its time, BEFORE (a checkout of the code before chunking) and AFTER
(this tree), in the same run, each in its own subprocess.

A click is `analysis.effect.all_heads` on the bundled MiniLM, as app_pages/effect/page.py calls it:
the sentence-vector norm target, integrated gradients from zero vectors with the most steps the
page allows for the text (16 at 512 tokens, 32 at 252), and occlusion ("remove") where the
text is within its 256-token bound. AFTER reserves the click's estimated memory from a
working-memory pool of ATTENTION_LAB_WORKING_MB (server/working_memory.py, default 512 MB) and
runs in the chunks that fit, as the page does. "two at once": two clicks on two texts started
together in one process (two users), the peak of the process.

Peak: resident memory sampled every 2 ms by a thread, minus the resident memory before the
click (the model loaded, one small warm-up run done). One torch thread per pass, as a hosted
server runs them. The estimate column is analysis/cost.py's for the same click.

    git worktree add /tmp/effect-before ecd5780
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_effect_memory.py \\
        --before /tmp/effect-before [--tokens 512 252] [--repeats 2]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 2**20


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _text(n_words: int, offset: int = 0) -> str:
    words = ("the cat sat on the mat because it was warm and the dog slept by the door while "
             "rain fell on the old roof of the house").split()
    return " ".join(words[(i + offset) % len(words)] for i in range(n_words))


def _click(lm, text: str, tokens: int, pool):
    """One "Measure every token": what the page computes for this text (AFTER: inside its
    reservation)."""
    import torch

    from analysis.ablation import Inputs
    from analysis.effect import MAX_OCCLUSION_TOKENS, all_heads
    from analysis.effect_target import make_target

    inputs = Inputs.encode(lm, text)
    ids = torch.cat([inputs.input_ids[:, :tokens - 1], inputs.input_ids[:, -1:]], dim=1)
    # [1, tokens]: the text's first tokens and its closing [SEP]
    inputs = Inputs(ids, inputs.attention_mask[:, :tokens], inputs.token_type_ids[:, :tokens])
    target = make_target(lm, inputs, pooling="mean")
    steps = max(s for s in (4, 8, 16, 32, 64) if s * tokens <= 64 * 128)
    mode = "remove" if tokens <= MAX_OCCLUSION_TOKENS else None
    if pool is None:
        return all_heads(lm, inputs, target, "zero", steps, mode)
    from analysis.cost import effect_plan

    plan = effect_plan(lm.cfg, tokens, steps, mode is not None, pool.allowance)
    with pool.reserve(plan.most, plan.least) as grant:
        return all_heads(lm, inputs, target, "zero", steps, mode, allowance=grant.bytes)


def worker(tree: str, tokens: int, users: int) -> dict:
    """In a subprocess: load MiniLM from `tree`'s code, warm up, then `users` clicks at once."""
    sys.path.insert(0, tree)
    import torch

    torch.set_num_threads(1)
    from model.allocator import keep_freed_memory

    keep_freed_memory()  # as the app runs
    from model import load_model

    pool = None
    for package in ("server", "ui"):  # where the working memory lives in that tree (if it has one)
        if (Path(tree) / package / "working_memory.py").exists():
            wm = importlib.import_module(f"{package}.working_memory")
            pool = wm.WorkingMemory(wm.allowance_from_env())
            break
    lm = load_model("minilm")
    _click(lm, _text(10), 12, pool)  # warm-up
    base, peak, done = _rss(), [0], [False]

    def sample() -> None:
        while not done[0]:
            peak[0] = max(peak[0], _rss())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.perf_counter()
    clicks = [threading.Thread(target=_click, args=(lm, _text(tokens * 2, i), tokens, pool))
              for i in range(users)]
    for c in clicks:
        c.start()
    for c in clicks:
        c.join()
    seconds = time.perf_counter() - start
    done[0] = True
    sampler.join()
    return {"added_mb": (max(peak[0], _rss()) - base) / MB, "seconds": seconds,
            "base_mb": base / MB}


def _run(tree: str, tokens: int, users: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, __file__, "--worker", tree, str(tokens), str(users)],
                         capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _estimate(tokens: int) -> str:
    sys.path.insert(0, str(ROOT))
    from analysis.cost import effect_plan
    from model import load_model
    from server.working_memory import allowance_from_env

    cfg = load_model("minilm").cfg
    steps = max(s for s in (4, 8, 16, 32, 64) if s * tokens <= 64 * 128)
    plan = effect_plan(cfg, tokens, steps, tokens <= 256, allowance_from_env())
    return f"{plan.most / MB:.0f} MB (least {plan.least / MB:.0f} MB), {plan.seconds:.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="a checkout of the code before")
    parser.add_argument("--tokens", type=int, nargs="+", default=[512, 252])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"{platform.node()} · {os.cpu_count()} cores · torch 1 thread · "
          f"ATTENTION_LAB_WORKING_MB={os.environ.get('ATTENTION_LAB_WORKING_MB', '512')} · "
          f"load {os.getloadavg()[0]:.1f}")
    print("| tokens | users | code | peak RSS added | time | estimate (after) |")
    print("| ---: | ---: | --- | ---: | ---: | --- |")
    for tokens in args.tokens:
        for users in (1, 2):
            for _ in range(args.repeats):
                for name, tree in (("before", args.before), ("after", str(ROOT))):
                    r = _run(tree, tokens, users)
                    note = _estimate(tokens) if name == "after" and users == 1 else ""
                    print(f"| {tokens} | {users} | {name} | {r['added_mb']:,.0f} MB | "
                          f"{r['seconds']:.1f} s | {note} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    else:
        main()
