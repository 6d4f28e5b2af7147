"""Forward-pass benchmark: our traced MiniLM against Hugging Face eager, in one run.

For each length N (tokens, [CLS] and [SEP] included) this times, interleaved repeat by repeat:

  hf          tokenizer(text) + AutoModel(attn_implementation="eager")(...,
              output_attentions=True, output_hidden_states=True) under torch.inference_mode
  ours        load_model("minilm").run(text): every hook point cached (the full trace)
  ours_attn   the same with keep= limited to the attention patterns (attn.hook_pattern)
  ours_app    the same with the app's own keep= (ui.cache.keep_for_app), if it imports
  hf_fwd      HF forward only, on ids tokenized beforehand
  ours_fwd    LoadedModel.run_ids(ids), full trace, no tokenizer

and, after each `ours` run, the lazily stacked `Trace.attentions` (and `Trace.hidden_states`).
Minor page faults per call are recorded too: they show the allocator handing memory back.
The order of the variants rotates every repeat so drift (thermal, other jobs) falls on all of
them; each repeat gives one ratio per variant against the hf run of the same repeat, and the
table reports the median of those ratios. The outputs are checked once per length (max abs
difference of every attention pattern and hidden state) so both sides compute the same thing.

    HF_HUB_OFFLINE=1 python bench/bench_forward.py [--repeats 20] [--lengths 128 512]
        [--threads 2] [--out bench/out/forward.json]

Prints a Markdown table for BENCHMARKS.md; writes every raw time and the machine to --out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from model import load_model  # noqa: E402
from model.registry import BUNDLED  # noqa: E402

VARIANTS = ("hf", "ours", "ours_attn", "ours_app", "hf_fwd", "ours_fwd")
LABELS = {
    "hf": "HF eager: tokenize + forward, attentions + hidden states",
    "ours": "ours `run(text)`, full trace (every hook point)",
    "ours_attn": "ours `run(text, keep=attn.hook_pattern)`",
    "ours_app": "ours `run(text, keep=ui.cache.keep_for_app)`",
    "hf_fwd": "HF eager forward only (ids given)",
    "ours_fwd": "ours `run_ids(ids)`, full trace",
}
BASELINE = {"hf": "hf", "ours": "hf", "ours_attn": "hf", "ours_app": "hf", "hf_fwd": "hf_fwd",
            "ours_fwd": "hf_fwd"}

# Our own filler text: plain sentences about a kitchen garden, cycled and numbered so that
# long inputs do not repeat exactly.
SENTENCES = [
    "the garden behind the old house grows beans, onions and a row of tall sunflowers",
    "every morning the gardener waters the seedlings before the sun climbs over the wall",
    "a small robin waits on the fence for worms turned up by the spade",
    "in late summer the tomatoes ripen faster than anyone can pick them",
    "the neighbours trade jars of jam for baskets of green peppers and fresh herbs",
    "when it rains the paths turn to mud and the snails come out to feed",
    "she keeps a notebook of what was planted where, and how well it did",
    "the compost heap steams on cold mornings because it is working hard",
]


def attention_patterns_only(name: str) -> bool:
    """keep= predicate: cache only the attention patterns."""
    return name.endswith("attn.hook_pattern")


# ------------------------------------------------------------------------------ input text
def text_of_length(tokenizer, n_tokens: int) -> str:
    """Deterministic text that the MiniLM tokenizer turns into exactly n_tokens ids
    ([CLS] and [SEP] included)."""
    budget = n_tokens - 2
    words: list[str] = []
    used = 0
    i = 0
    while True:
        sentence = f"{SENTENCES[i % len(SENTENCES)]} ({i + 1})."
        for word in sentence.split():
            cost = len(tokenizer(word, add_special_tokens=False)["input_ids"])
            if used + cost > budget:
                break
            words.append(word)
            used += cost
        else:
            i += 1
            continue
        break
    words += ["and"] * (budget - used)  # "and" is one token
    text = " ".join(words)
    got = len(tokenizer(text)["input_ids"])
    if got != n_tokens:
        raise RuntimeError(f"built a text of {got} tokens, wanted {n_tokens}")
    return text


# ------------------------------------------------------------------------------- machine
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(threads: int) -> dict:
    import transformers

    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "model"],
                               capture_output=True, text=True, check=True).stdout.strip()
        commit += " (uncommitted changes in model/)" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "cpu": cpu_model(),
        "logical_cores": os.cpu_count(),
        "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "torch_threads": threads,
        "torch_interop_threads": torch.get_num_interop_threads(),
        "parallel_backend": "OpenMP" if "OpenMP" in torch.__config__.parallel_info() else "other",
        "platform": platform.platform(),
        "git_commit": commit,
    }


def machine_line(m: dict) -> str:
    return (f"{m['cpu']}, {m['cores_available']} cores, torch {m['torch']} "
            f"({m['torch_threads']} threads), transformers {m['transformers']}, "
            f"Python {m['python']}")


# ------------------------------------------------------------------------------ stats
def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "p10": percentile(xs, 0.1),
            "p90": percentile(xs, 0.9), "min": min(xs), "n": len(xs)}


# ------------------------------------------------------------------------------ bench
def quartiles(values: list[float]) -> tuple[float, float]:
    """(first, third) quartile: the spread of per-repeat ratios the tables report."""
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


def verify(lm, hf, tok, text: str) -> dict:
    trace = lm.run(text)
    enc = tok(text, return_tensors="pt")
    with torch.inference_mode():
        out = hf(**enc, output_attentions=True, output_hidden_states=True)
    if not torch.equal(trace.input_ids, enc["input_ids"]):
        raise RuntimeError("ours and HF tokenized the text differently")
    hf_attn = torch.stack(out.attentions, 1)[0]  # [layer, head, q, k]
    hf_hidden = torch.stack(out.hidden_states, 1)[0]  # [layer + 1, pos, d_model]
    result = {
        "attentions_max_abs_diff": max_diff(trace.attentions, hf_attn),
        "hidden_states_max_abs_diff": max_diff(trace.hidden_states, hf_hidden),
        "last_hidden_max_abs_diff": max_diff(trace.final[0], out.last_hidden_state[0]),
        "pooled_max_abs_diff": max_diff(trace.pooled[0], out.pooler_output[0]),
        "n_hook_points_cached": len(trace.cache),
        "n_hook_points": len(lm.hook_names),
    }
    if result["attentions_max_abs_diff"] > 1e-4 or result["hidden_states_max_abs_diff"] > 1e-3:
        raise RuntimeError(f"ours and HF disagree: {result}")
    if result["n_hook_points_cached"] != result["n_hook_points"]:
        raise RuntimeError("run(text) did not cache every hook point")
    return result


def app_keep():
    """The app's keep= predicate, or None when the UI package (streamlit) does not import."""
    try:
        from ui.cache import keep_for_app
    except Exception:  # noqa: BLE001 - streamlit missing or the UI changed: skip the row
        return None
    return keep_for_app


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _timed_rounds(calls: dict, variants: list[str], repeats: int) -> tuple:
    """Run every variant `repeats` times in rotating order with the GC off; the times, page
    faults and (for "ours") the cost of stacking the attentions and hidden states."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    faults: dict[str, list[int]] = {name: [] for name in variants}
    stack_attn: list[float] = []
    stack_hidden: list[float] = []
    orders = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeats):
            k = r % len(variants)
            order = variants[k:] + variants[:k]
            if (r // len(variants)) % 2:
                order.reverse()
            orders.append(order)
            for name in order:
                f0 = minor_faults()
                t0 = time.perf_counter()
                result = calls[name]()
                times[name].append(time.perf_counter() - t0)
                faults[name].append(minor_faults() - f0)
                if name == "ours":
                    t0 = time.perf_counter()
                    result.attentions  # noqa: B018 - a cached_property: this stacks
                    stack_attn.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    result.hidden_states  # noqa: B018
                    stack_hidden.append(time.perf_counter() - t0)
                del result
                gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()
    return times, faults, stack_attn, stack_hidden, orders


def bench_length(lm, hf, tok, n_tokens: int, repeats: int, warmup: int) -> dict:
    text = text_of_length(tok, n_tokens)
    ids = tok(text, return_tensors="pt")
    keep = attention_patterns_only

    def run_hf():
        enc = tok(text, return_tensors="pt")
        with torch.inference_mode():
            return hf(**enc, output_attentions=True, output_hidden_states=True)

    def run_hf_fwd():
        with torch.inference_mode():
            return hf(**ids, output_attentions=True, output_hidden_states=True)

    calls = {
        "hf": run_hf,
        "ours": lambda: lm.run(text),
        "ours_attn": lambda: lm.run(text, keep=keep),
        "hf_fwd": run_hf_fwd,
        "ours_app": (lambda keep_app=app_keep(): lm.run(text, keep=keep_app)),
        "ours_fwd": lambda: lm.run_ids(ids["input_ids"][0], ids["attention_mask"][0],
                                       ids["token_type_ids"][0]),
    }
    variants = [v for v in VARIANTS if v != "ours_app" or app_keep() is not None]
    check = verify(lm, hf, tok, text)
    attn_only = lm.run(text, keep=keep)
    check["ours_attn_cached"] = sorted(attn_only.cache) == sorted(
        n for n in lm.hook_names if keep(n))
    del attn_only

    for _ in range(warmup):
        for name in variants:
            calls[name]()
    gc.collect()

    times, faults, stack_attn, stack_hidden, orders = _timed_rounds(calls, variants, repeats)

    ratios = {name: [t / times[BASELINE[name]][i] for i, t in enumerate(times[name])]
              for name in variants if name != BASELINE[name]}
    return {
        "n_tokens": n_tokens,
        "text": text,
        "verify": check,
        "seconds": {name: summary(ts) for name, ts in times.items()},
        "ratio_median": {name: statistics.median(rs) for name, rs in ratios.items()},
        "ratio_p10_p90": {name: [percentile(rs, 0.1), percentile(rs, 0.9)]
                          for name, rs in ratios.items()},
        "page_faults_median": {name: statistics.median(f) for name, f in faults.items()},
        "stack_attentions": summary(stack_attn),
        "stack_hidden_states": summary(stack_hidden),
        "raw": {"times": times, "ratios": ratios, "page_faults": faults, "stack_attentions": stack_attn,
                "stack_hidden_states": stack_hidden, "orders": orders},
    }


# ------------------------------------------------------------------------------ report
def markdown(results: list[dict], machine: dict, repeats: int) -> str:
    ms = lambda s: f"{1000 * s:.1f}"  # noqa: E731
    lines = [
        f"Machine: {machine_line(machine)}. Median of {repeats} interleaved repeats; "
        "ratio = median of per-repeat ratios against the HF row named in `vs` (for the "
        "stacking rows: its median over HF's median); page faults = median minor faults per call.",
        "",
        "| tokens | what | median ms | p10 ms | p90 ms | ratio (median) | vs | page faults |",
        "| ---: | --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for res in results:
        n, sec = res["n_tokens"], res["seconds"]
        for name in (v for v in VARIANTS if v in sec):
            s = sec[name]
            ratio = "1" if name == BASELINE[name] else f"{res['ratio_median'][name]:.3f}"
            lines.append(f"| {n} | {LABELS[name]} | {ms(s['median'])} | {ms(s['p10'])} | "
                         f"{ms(s['p90'])} | {ratio} | {BASELINE[name]} | "
                         f"{res['page_faults_median'][name]:.0f} |")
        for key, label in (("stack_attentions", "`Trace.attentions` stacking (first access)"),
                           ("stack_hidden_states", "`Trace.hidden_states` stacking")):
            s = res[key]
            share = s["median"] / sec["hf"]["median"]
            lines.append(f"| {n} | {label} | {ms(s['median'])} | {ms(s['p10'])} | "
                         f"{ms(s['p90'])} | {share:.3f} | hf | |")
    lines.append("")
    checks = "; ".join(
        f"{r['n_tokens']} tokens: attentions {r['verify']['attentions_max_abs_diff']:.1e}, "
        f"hidden states {r['verify']['hidden_states_max_abs_diff']:.1e}"
        for r in results)
    lines.append(f"Outputs agree (max abs diff, ours vs HF): {checks}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=20, help="timed repeats per length (20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs of each variant first")
    p.add_argument("--lengths", type=int, nargs="+", default=[128, 512],
                   help="input lengths in tokens, [CLS] and [SEP] included (128 512)")
    p.add_argument("--threads", type=int, default=torch.get_num_threads(),
                   help="torch threads for both models (default: torch's own choice)")
    p.add_argument("--out", type=Path,
                   default=ROOT / "bench" / "out" / "forward.json", help="JSON with raw times")
    args = p.parse_args(argv)
    if args.repeats < 2:
        p.error("--repeats must be at least 2")

    torch.set_num_threads(args.threads)
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    lm = load_model("minilm", device="cpu")
    directory = str(BUNDLED["minilm"]())
    hf = AutoModel.from_pretrained(directory, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(directory)
    if hf.config._attn_implementation != "eager":
        raise RuntimeError("HF did not load the eager attention")
    too_long = [n for n in args.lengths if n > lm.cfg.n_ctx or n < 8]
    if too_long:
        p.error(f"lengths must lie in [8, {lm.cfg.n_ctx}]: {too_long}")

    machine = machine_info(args.threads)
    load_before = os.getloadavg()
    started = time.perf_counter()
    results = [bench_length(lm, hf, tok, n, args.repeats, args.warmup) for n in args.lengths]
    machine["loadavg_before"] = load_before
    machine["loadavg_after"] = os.getloadavg()
    table = markdown(results, machine, args.repeats)
    print(table)
    print(f"\nload average before/after: {load_before[0]:.2f} / {machine['loadavg_after'][0]:.2f}"
          f" (1 min); took {time.perf_counter() - started:.0f} s")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "forward",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": machine,
        "results": results,
        "markdown": table,
    }, indent=1))
    print(f"raw results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
