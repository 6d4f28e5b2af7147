"""tiny-words' behaviours on held-out sentences, for BENCHMARKS.md (the numbers the goals of
issue 36 are checked against; tests/unit/test_tiny_words.py asserts the goals).

    python bench/bench_tiny_words.py [--n 1000] [--model DIR] [--out bench/out/tiny_words.json]

Held-out: templates, names, objects and nouns never used in those roles in training
(training/english_world.py, english_corpus.py); n examples of each kind, seed fixed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from model import load_model  # noqa: E402
from model.loading import resolve  # noqa: E402
from training import english_task as et  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--model", default="tiny-words",
                        help="a bundled name or the folder of a candidate run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "tiny_words.json")
    args = parser.parse_args()
    lm = load_model(args.model)
    b = et.behaviours(lm.model, lm.tokenizer, n=args.n)
    training = json.loads((resolve(args.model) / "config.json").read_text())["training"]
    rows = [
        ("indirect object: right name beats the repeated name", f"{b.io.pair_accuracy:.1%}",
         "≥ 95%"),
        ("indirect object: the top word is the right name", f"{b.io.top_accuracy:.1%}", "—"),
        ("indirect object: mean logit difference (right − repeated)",
         f"{b.io.mean_logit_diff:.2f}", "≥ 3"),
        ("agreement across an attractor: the right verb beats the other",
         f"{b.agreement.pair_accuracy:.1%}", "≥ 95%"),
        ("induction: loss on the repeated half / on the first half",
         f"{b.repeat_loss:.2f} / {b.first_half_loss:.2f} = {b.repeat_ratio:.1%}", "≤ 20%"),
        (f"induction: best head's score (layer {b.induction_head[0]}, head "
         f"{b.induction_head[1]})", f"{b.induction_score:.2f}", "≥ 0.8"),
    ]
    print(f"`python bench/bench_tiny_words.py --n {args.n}`, "
          f"{datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, "
          f"{os.cpu_count()} cores; trained in {training['seconds']:.0f} s "
          f"({training['command']}).\n")
    print("| behaviour (held-out) | measured | goal |\n| --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"n": args.n, "io": dataclasses.asdict(b.io),
                                    "agreement": dataclasses.asdict(b.agreement),
                                    "first_half_loss": b.first_half_loss,
                                    "repeat_loss": b.repeat_loss,
                                    "induction_score": b.induction_score,
                                    "induction_head": b.induction_head}, indent=1))


if __name__ == "__main__":
    main()
