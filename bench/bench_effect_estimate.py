"""/effect's time estimate beside the real time (issue 38): the page's analysis at a short text
and at a 318-token text, with no other work of ours on the machine ("idle") and with two other
sessions computing ("busy": two processes running MiniLM forward passes on a long text, at the
bench's own priority).

Each condition runs in a fresh process, as a server's first visit of /effect: the bundled MiniLM
is loaded and the text run once (the page's trace), then for each case the page's plan
(analysis/cost.effect_plan, with the server's working-memory allowance) gives the estimate the
page shows (ui/heavy.time_span and span_words, the machine read at that moment), and
`analysis.effect.all_heads` runs inside `ui.heavy.timed`, which teaches the process's pace as
room_for does on the page. Cases, in order: the short text (13 tokens, 64 steps, occlusion),
318 tokens at the 4 steps the page runs at once, 318 tokens at the 16 steps of its button
(each estimate learned from the runs before it). A second fresh process opens on the
318-token text (the 4 steps the page runs at once).

The load is shared with other people's work: the load average and the tasks running are
printed at each estimate and at each run's end. Run the busy case first and the idle case
last, and again if the load drops:

    HF_HUB_OFFLINE=1 nice -n 10 python bench/bench_effect_estimate.py [--conditions busy idle] \
        [--orders short long]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUSY = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import torch
from model.loading import load_model
from ui.examples import LONG
lm = load_model("minilm")
end = time.time() + float(sys.argv[2])
with torch.no_grad():
    while time.time() < end:
        lm.run(LONG)
"""

# (label, tokens (None: the whole text), steps, occlusion)
FIRST_SHORT = [("short", None, 64, "remove"), ("318, at once", 318, 4, None),
               ("318, button", 318, 16, None)]
FIRST_LONG = [("318, at once", 318, 4, None)]


def _inputs(lm, text: str, tokens: int | None):
    """The text's tokens, or its first `tokens` with its closing [SEP]."""
    import torch

    from analysis.ablation import Inputs

    inputs = Inputs.encode(lm, text)
    if tokens is None:
        return inputs
    ids = torch.cat([inputs.input_ids[:, :tokens - 1], inputs.input_ids[:, -1:]], dim=1)
    return Inputs(ids, inputs.attention_mask[:, :tokens], inputs.token_type_ids[:, :tokens])


def worker(cases: list) -> list[dict]:
    """In a fresh process: what the page shows and what it takes, case after case."""
    from analysis.cost import effect_plan
    from analysis.effect import all_heads
    from analysis.effect_target import make_target
    from model.loading import load_model
    from ui.examples import LONG, SHORT
    from ui import heavy
    from ui.heavy import PACE, machine_now, span_words, time_span, timed

    heavy.FRESH = 0.0  # each reading of the machine is new
    from server.working_memory import working_memory

    lm = load_model("minilm")
    rows = []
    for label, tokens, steps, mode in cases:
        inputs = _inputs(lm, SHORT if tokens is None else LONG, tokens)
        lm.run_ids(inputs.input_ids, inputs.attention_mask, inputs.token_type_ids)  # the trace
        target = make_target(lm, inputs, pooling="mean")
        k = inputs.input_ids.shape[1]
        allowance = working_memory().allowance
        plan = effect_plan(lm.cfg, k, steps, mode is not None, allowance)
        first = not PACE.seen("effect")
        machine = machine_now()
        span = time_span(plan, machine)
        start = time.monotonic()
        with timed(plan):
            all_heads(lm, inputs, target, None, steps, mode, allowance=allowance)
        real = time.monotonic() - start
        after = machine_now()  # the load as the run ends
        rows.append(dict(case=label, tokens=k, steps=steps, occlusion=mode is not None,
                         work=plan.seconds, cores=machine.cores, first=first,
                         words=span_words(span), low=span.low, high=span.high, real=real,
                         inside=span.low <= real <= span.high,
                         within_2x=(span.middle / 2 <= real <= 2 * span.middle),
                         loadavg=os.getloadavg()[0], load=machine.load,
                         running=machine.running, threads=machine.threads,
                         load_end=after.load, running_end=after.running,
                         ratios=PACE.ratios("effect")))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _condition(name: str, order: str, busy_seconds: float) -> list[dict]:
    busy = []
    if name == "busy":
        busy = [subprocess.Popen([sys.executable, "-c", BUSY, str(ROOT), str(busy_seconds)])
                for _ in range(2)]
        time.sleep(20)  # both running (and in the load average)
    try:
        out = subprocess.run([sys.executable, __file__, "--worker", order], check=True,
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)  # rows on stderr
    finally:
        for p in busy:
            p.kill()
            p.wait()
    rows = json.loads(out.stdout)
    for row in rows:
        row.update(condition=name, order=order)
    return rows


def _table(rows: list[dict]) -> str:
    lines = ["| condition | process opens on | case | tokens | steps | occlusion | page says "
             "| span s | real s | real in span | load average at start | others, weighed, "
             "from the load average (start → end) | others running now, weighed (start → end) |",
             "| --- | --- | --- | ---: | ---: | --- | --- | --- | ---: | --- | ---: | --- | --- |"]
    for r in rows:
        lines.append(
            f"| {r['condition']} | {r['order']} | {r['case']} | {r['tokens']} | {r['steps']} | "
            f"{'yes' if r['occlusion'] else 'no'} | {r['words']} | {r['low']:.1f}–{r['high']:.1f}"
            f" | {r['real']:.1f} | {'yes' if r['inside'] else '**no**'} | "
            f"{r.get('loadavg', float('nan')):.2f} | {r['load']:.2f} → "
            f"{r['load_end']:.2f} | {r['running']:.1f} → {r['running_end']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conditions", nargs="+", default=["busy", "idle"])
    ap.add_argument("--orders", nargs="+", default=["short", "long"],
                    help="which fresh processes: opening on the short text, on the 318 tokens")
    ap.add_argument("--busy-seconds", type=float, default=1800)
    ap.add_argument("--worker", choices=["short", "long"])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(FIRST_SHORT if args.worker == "short" else FIRST_LONG)))
        return
    import torch

    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Machine: "
          f"{platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, torch "
          f"{torch.__version__} ({torch.get_num_threads()} threads), Python "
          f"{platform.python_version()}; load average before: {os.getloadavg()}")
    rows = []
    for name in args.conditions:
        for order in args.orders:
            rows += _condition(name, order, args.busy_seconds)
    print(_table(rows))
    print(f"load average after: {os.getloadavg()}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
