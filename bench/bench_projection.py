"""Projection benchmark: PCA of 512 tokens × all layers of MiniLM against the 1 s goal.

The embeddings page fits one PCA on every layer's hidden states together ("all layers in one
space"): for MiniLM at 512 tokens that is 7 × 512 = 3,584 points of 384 numbers. This times,
on the hidden states of one real 512-token run:

  pca2 / pca3    analysis.projection.project_layers(states, "PCA", 2 or 3): the page's call
  sklearn3       sklearn.decomposition.PCA(3).fit_transform on the same points (reference)
  page3          pca3 plus building the figure of one layer with one token's path

and checks once that our coordinates equal scikit-learn's up to sign. Variants rotate every
repeat so drift falls on all of them. Prints a Markdown table for BENCHMARKS.md.

With --umap (issue 15), the first UMAP and t-SNE of 512 tokens × 7 layers of a natural text
(3,584 points), side by side with umap-learn, each first run in a fresh process
(bench/projection_first.py): ours; umap-learn with an empty numba cache (a fresh server:
numba compiles) and with a warm one; then ours again in this process (--repeats times),
scikit-learn's t-SNE at 1,500 and 3,584 points, and the trustworthiness (15 neighbours,
scikit-learn) of every layout against the 384-d points.

    HF_HUB_OFFLINE=1 python bench/bench_projection.py [--repeats 20] [--tokens 512]
        [--threads 2] [--umap]
"""

from __future__ import annotations

import argparse
import os
import platform
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

from model import load_model  # noqa: E402
from analysis.projection import project_layers, token_points  # noqa: E402
from viz.labels import axis_labels  # noqa: E402
from viz.projection import projection_figure  # noqa: E402

GOAL_SECONDS = 1.0
LABELS = {
    "pca2": "`project_layers(states, \"PCA\", 2)`",
    "pca3": "`project_layers(states, \"PCA\", 3)`",
    "sklearn3": "scikit-learn `PCA(3).fit_transform` (reference)",
    "page3": "PCA 3D + the figure of one layer with a token's path",
}


def text_of_tokens(lm, n_tokens: int) -> str:
    """A text that the tokenizer turns into at least n_tokens tokens ([CLS]/[SEP] included)."""
    words = ("attention lets every token look at every other token while positions tell the "
             "model where each one stands ").split()
    text = " ".join(words)
    while len(lm.encode(text).tokens[0]) < n_tokens:
        text += " " + " ".join(words)
    return text


def run_variant(name: str, states: np.ndarray, labels: list[str]) -> float:
    start = time.perf_counter()
    if name in ("pca2", "pca3", "page3"):
        coords, explained = project_layers(states, "PCA", 3 if name != "pca2" else 2)
        if name == "page3":
            projection_figure(coords[3], labels, np.arange(len(labels)), "position", "t",
                              axis_titles=[f"PC{j + 1} ({100 * e:.1f}%)"
                                           for j, e in enumerate(explained)],
                              path=coords[:, 5], path_names=[f"L{j}" for j in range(7)],
                              path_title="path")
    else:
        from sklearn.decomposition import PCA

        PCA(3).fit_transform(states.reshape(-1, states.shape[-1]))
    return time.perf_counter() - start


def check(states: np.ndarray) -> float:
    """Largest difference between our PCA and scikit-learn's, up to each component's sign."""
    from sklearn.decomposition import PCA

    flat = states.reshape(-1, states.shape[-1]).astype(np.float64)  # [layer * pos, d_model]
    ours = project_layers(states, "PCA", 3)[0].reshape(-1, 3)  # [layer * pos, 3]
    ref = PCA(3, svd_solver="full").fit_transform(flat)  # [layer * pos, 3]
    signs = np.sign((ours * ref).sum(axis=0))  # [3]
    return float(np.abs(ours - ref * signs).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--umap", action="store_true",
                        help="the first UMAP / t-SNE against umap-learn instead of PCA")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.umap:
        from projection_first import umap_section

        umap_section(args.repeats)
        return

    lm = load_model("minilm")
    trace = lm.run(text_of_tokens(lm, args.tokens), keep=lambda n: "hook_resid" in n)
    points = token_points(trace)
    states = points.states  # [layer, pos, d_model]
    labels = axis_labels(points.tokens)
    n_layers, n_tokens, d_model = states.shape
    diff = check(states)

    variants = list(LABELS)
    times: dict[str, list[float]] = {v: [] for v in variants}
    for v in variants:  # warm-up: imports, BLAS threads, first allocations
        run_variant(v, states, labels)
    for r in range(args.repeats):
        order = variants[r % len(variants):] + variants[: r % len(variants)]
        for v in order:
            times[v].append(run_variant(v, states, labels))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"PCA of {n_tokens} tokens × {n_layers} layers = {n_layers * n_tokens:,} points of "
          f"{d_model} (MiniLM), {args.repeats} repeats, torch threads {args.threads}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load:.2f} at the end. Max |ours − scikit-learn| (up to sign): {diff:.1e}.")
    print()
    print("| what | median | p90 | goal 1 s |")
    print("| --- | ---: | ---: | --- |")
    for v in variants:
        xs = sorted(times[v])
        med, p90 = statistics.median(xs), xs[min(len(xs) - 1, int(0.9 * len(xs)))]
        verdict = "—" if v == "sklearn3" else ("met" if p90 < GOAL_SECONDS else "NOT met")
        print(f"| {LABELS[v]} | {med * 1000:.0f} ms | {p90 * 1000:.0f} ms | {verdict} |")


if __name__ == "__main__":
    main()
