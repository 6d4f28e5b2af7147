"""glibc's allocator settings: memory handed back after eviction vs forward-pass speed (issue 18).

For each setting (a name, and the environment the process starts with: ATTENTION_LAB_MALLOC
for the app's mallopt tuning in model/allocator.py, MALLOC_ARENA_MAX for glibc's arena
count), two fresh processes:

- threads: MiniLM runs --runs distinct 512-token texts the way the server does: each run in a
  new thread (Streamlit runs each page in a new thread), --sessions threads alive at once,
  --slots of them computing (the run queue), each putting its trace (the app's `keep`, with
  its attentions stacked) in one server.budget.MemoryBudget of --budget-mb. Server RSS is taken
  after one warm-up run ("base"), at its peak, with the budget full, and after everything is
  evicted, gc.collect() and malloc_trim(0) ("evicted"): what stays above base is memory the
  allocator did not give back. Also: arenas, and seconds per run.
- forward: bench/bench_forward.py --lengths 512 (ours against HF in one process, interleaved);
  the goal is ours/HF ≤ 1.05 for the full trace.

    HF_HUB_OFFLINE=1 python bench/bench_memory.py [--settings NAME ...] [--skip-forward]

Prints a Markdown table for BENCHMARKS.md and writes every number to --out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = {  # name: environment
    "glibc defaults": {"ATTENTION_LAB_MALLOC": "glibc"},
    "mmap 32M, trim 1G (16 arenas)": {"ATTENTION_LAB_MALLOC": "mmap=32M,trim=1G"},
    "mmap 32M, trim 1G, 1 arena": {"ATTENTION_LAB_MALLOC": "mmap=32M,trim=1G",
                                    "MALLOC_ARENA_MAX": "1"},
    "mmap 32M, trim 1G, 2 arenas": {"ATTENTION_LAB_MALLOC": "mmap=32M,trim=1G",
                                     "MALLOC_ARENA_MAX": "2"},
    "mmap 32M, trim 16M (16 arenas)": {"ATTENTION_LAB_MALLOC": "mmap=32M,trim=16M"},
    "mmap 4M, trim 1G (16 arenas)": {"ATTENTION_LAB_MALLOC": "mmap=4M,trim=1G"},
}
WORDS = ("the river ran past old stone houses while children watched small boats drift under "
         "bright autumn trees and a teacher explained how every head of the model attends to "
         "other tokens in the sentence").split()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def text(i: int, n_words: int = 600) -> str:
    """A distinct text of more than 512 tokens (cut to 512 by the run)."""
    return f"Text {i} begins. " + " ".join(WORDS[(i * 7 + j * (i % 11 + 3)) % len(WORDS)]
                                          for j in range(n_words))


def threads_child(args) -> dict:
    """The server's pattern in one process (see the module docstring); numbers in MB."""
    sys.path.insert(0, str(ROOT))
    import torch

    from model import load_model
    from model.allocator import arena_count, keep_freed_memory, release_free_memory
    from server.budget import MemoryBudget
    from ui.cache import keep_for_app

    torch.set_num_threads(1)  # hosted mode: one torch thread per run
    lm = load_model("minilm")
    lm.run(text(-1), keep=keep_for_app).attentions  # noqa: B018 - warm up
    gc.collect()
    release_free_memory()
    base = rss_mb()
    store = MemoryBudget(max_entries=128, max_bytes=args.budget_mb << 20)
    computing, alive = threading.Semaphore(args.slots), threading.Semaphore(args.sessions)
    peak, done, seconds = [base], threading.Event(), []

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss_mb())

    def page_run(i: int) -> None:
        try:
            page = [text(i)] * 64  # a page's own small objects, made before it waits its turn
            with computing:
                start = time.perf_counter()
                trace = lm.run(page[0], keep=keep_for_app)
                trace.attentions  # noqa: B018 - the app stacks them for its figures
                store.put(("run", i), trace)
                seconds.append(time.perf_counter() - start)
        finally:
            alive.release()

    threading.Thread(target=sample, daemon=True).start()
    began, threads = time.perf_counter(), []
    for i in range(args.runs):
        alive.acquire()
        threads.append(threading.Thread(target=page_run, args=(i,)))
        threads[-1].start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    gc.collect()
    full, kept = rss_mb(), store.nbytes / 2**20
    for key in list(store._items):
        store.put(key, None, nbytes=store.max_bytes + 1)  # evict: too big to keep
    gc.collect()
    release_free_memory()
    time.sleep(0.5)
    evicted = rss_mb()
    done.set()
    return {"base_mb": base, "peak_mb": peak[0], "full_mb": full, "kept_mb": kept,
            "over_budget_mb": full - base - kept, "evicted_mb": evicted,
            "held_after_eviction_mb": evicted - base, "arenas": arena_count(),
            "mallopt": keep_freed_memory(), "run_s_median": sorted(seconds)[len(seconds) // 2],
            "runs_per_s": args.runs / wall}


def forward(env: dict, args) -> dict:
    out = Path(args.out).with_name(f"forward_{abs(hash(json.dumps(env, sort_keys=True)))}.json")
    cmd = [sys.executable, str(ROOT / "bench" / "bench_forward.py"), "--lengths", "512",
           "--repeats", str(args.repeats), "--threads", str(args.threads), "--out", str(out)]
    done = subprocess.run(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    result = json.loads(out.read_text())["results"][0]
    return {"ours_over_hf": result["ratio_median"]["ours"],
            "app_over_hf": result["ratio_median"].get("ours_app"),
            "ours_faults": result["page_faults_median"]["ours"],
            "hf_ms": 1000 * result["seconds"]["hf"]["median"],
            "ours_ms": 1000 * result["seconds"]["ours"]["median"], "raw": str(out)}


def child_run(env: dict, args) -> dict:
    cmd = [sys.executable, __file__, "--child", "--runs", str(args.runs), "--sessions",
           str(args.sessions), "--slots", str(args.slots), "--budget-mb", str(args.budget_mb)]
    done = subprocess.run(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def markdown(rows: list[dict], args) -> str:
    lines = [f"{args.runs} runs of 512 tokens, {args.sessions} threads alive, {args.slots} "
             f"computing, budget {args.budget_mb} MB; forward: bench_forward.py --lengths 512 "
             f"--repeats {args.repeats} --threads {args.threads}. MB of server RSS.", "",
             "| setting | arenas | base | peak | budget full: over base + kept | after eviction:"
             " held above base | s per run | ours / HF (full trace) | app keep / HF "
             "| page faults per run |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        t, f = row["threads"], row.get("forward") or {}
        ratio = lambda k: f"{f[k]:.3f}" if f.get(k) else "—"  # noqa: E731
        lines.append(f"| {row['name']} | {t['arenas']} | {t['base_mb']:,.0f} | "
                     f"{t['peak_mb']:,.0f} | {t['over_budget_mb']:,.0f} | "
                     f"**{t['held_after_eviction_mb']:,.0f}** | {t['run_s_median']:.2f} | "
                     f"{ratio('ours_over_hf')} | {ratio('app_over_hf')} | "
                     f"{f.get('ours_faults', float('nan')):,.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS), metavar="NAME")
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--budget-mb", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=12, help="of bench_forward.py")
    parser.add_argument("--threads", type=int, default=2, help="torch threads, bench_forward")
    parser.add_argument("--skip-forward", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "memory.json"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(threads_child(args)))
        return
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    rows, load_before = [], os.getloadavg()[0]
    for name in args.settings:
        env = SETTINGS[name]
        row = {"name": name, "env": env, "threads": child_run(env, args)}
        if not args.skip_forward:
            row["forward"] = forward(env, args)
        rows.append(row)
        print(json.dumps(row), flush=True)
    table = markdown(rows, args)
    loads = f"load average before/after {load_before:.2f} / {os.getloadavg()[0]:.2f}"
    print(f"\n{table}\n\n{loads}")
    Path(args.out).write_text(json.dumps({"rows": rows, "args": vars(args), "load": loads,
                                          "markdown": table}, indent=1))


if __name__ == "__main__":
    main()
