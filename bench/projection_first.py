"""The first UMAP on a fresh server (issue 15), for `bench_projection.py --umap`.

Run as a child process, this file times one first projection in a fresh Python process:

    python bench/projection_first.py ours|umap-learn|page STATES.npy OUT.npy

  ours        torch, numpy and analysis.projection are imported first (a server has them once
              its embeddings page has loaded); timed: project_layers(states, "UMAP", 2), with
              its own lazy imports (scipy.sparse, analysis.umap_layout)
  umap-learn  what the page ran before: timed from `import umap` (numba compiles, or loads
              its cache: NUMBA_CACHE_DIR decides) to the end of UMAP(n_neighbors=15,
              random_state=0, init="spectral").fit_transform
  page        the Embeddings page in AppTest (the real script) with the natural text, all
              layers in one space, PCA first; timed: choosing UMAP until that rerun ends

It prints one JSON line: wall and CPU seconds, import seconds for umap-learn.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# Natural prose for the projection (a repeated sentence gives a degenerate cloud of near
# copies). ui.examples.LONG, then this paragraph; together more than 512 MiniLM tokens.
MORE = (
    "Training such a model starts from random numbers. The model reads millions of sentences, "
    "guesses a hidden or next word for each, and compares its guess with the word that was "
    "really there. The size of the mistake flows backwards through every layer, and each "
    "weight moves a tiny step in the direction that would have made the guess better. Nobody "
    "tells a head to follow the previous word or to find the verb of a sentence; those habits "
    "appear because they help the guesses. Early in training, attention is spread almost "
    "evenly, like a student who has not yet learned where to look. Later, some heads become "
    "sharp and look at one token only, while others stay broad and collect a summary of the "
    "whole text. Some of these habits are easy to name and some are not, and a few heads seem "
    "to do nothing useful at all: removing them barely changes the output. Researchers "
    "compare models of different sizes, trained on different text, and find the same kinds "
    "of heads again and again, which suggests that they are useful solutions rather than "
    "accidents. A good way to learn what a head does is to form a guess, write a sentence "
    "that should trigger it, and check whether the pattern appears.")


def child(kind: str, states_file: str, out_file: str) -> None:
    sys.path.insert(0, str(ROOT))
    states = np.load(states_file)  # [layer, point, d_model]
    if kind == "page":
        _page_child(out_file)
        return
    if kind == "ours":
        import torch  # noqa: F401  (loaded by the server long before)

        from analysis.projection import project_layers

        t0, c0 = time.perf_counter(), time.process_time()
        coords, _ = project_layers(states, "UMAP", 2)
        imported = 0.0
    else:
        import warnings

        warnings.simplefilter("ignore")
        t0, c0 = time.perf_counter(), time.process_time()
        import umap

        imported = time.perf_counter() - t0
        flat = states.reshape(-1, states.shape[-1]).astype(np.float64)
        coords = umap.UMAP(n_components=2, n_neighbors=15, random_state=0,
                           init="spectral").fit_transform(flat)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.save(out_file, np.asarray(coords).reshape(-1, 2))
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "import_s": imported}))


def _page_child(out_file: str) -> None:
    import logging

    from streamlit.testing.v1 import AppTest

    from ui.examples import LONG

    sys.path.insert(0, str(ROOT / "tests"))
    from page_links import switch

    logging.disable(logging.WARNING)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.session_state["sb_text"] = LONG + " " + MORE
    switch(at, "embeddings").run()
    at.radio(key="emb_fit").set_value(at.radio(key="emb_fit").options[0]).run()
    t0, c0 = time.perf_counter(), time.process_time()
    at.radio(key="emb_method").set_value("UMAP").run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    charts = {el.key: el for el in at.get("plotly_chart")}
    if at.exception or "emb_projection" not in charts:
        raise RuntimeError(f"no UMAP figure: {at.exception}")
    title = json.loads(charts["emb_projection"].proto.spec)["layout"]["title"]["text"]
    if not title.startswith("UMAP of 512 tokens"):
        raise RuntimeError(f"unexpected figure: {title}")
    np.save(out_file, np.zeros((1, 2)))
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "import_s": 0.0}))


def fresh(kind: str, states_file: str, numba_dir: str | None = None) -> tuple[dict, np.ndarray]:
    """One first projection in a new process; (times, coords [point, 2])."""
    out = tempfile.NamedTemporaryFile(suffix=".npy", delete=False).name
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if numba_dir is not None:
        env["NUMBA_CACHE_DIR"] = numba_dir
    done = subprocess.run([sys.executable, __file__, kind, states_file, out], env=env,
                          capture_output=True, text=True, check=True, cwd=ROOT)
    times = json.loads(done.stdout.strip().splitlines()[-1])
    coords = np.load(out)
    os.unlink(out)
    return times, coords


def natural_states() -> np.ndarray:
    """Hidden states [7, 512, 384] of MiniLM on ui.examples.LONG + MORE, cut to 512 tokens."""
    from analysis.projection import token_points
    from model import load_model
    from ui.examples import LONG

    trace = load_model("minilm").run(LONG + " " + MORE, keep=lambda n: "hook_resid" in n)
    return token_points(trace).states


def _tsne(flat: np.ndarray, n: int) -> tuple[float, float, np.ndarray]:
    from sklearn.manifold import TSNE

    t0, c0 = time.perf_counter(), time.process_time()
    y = TSNE(2, perplexity=30.0, init="pca", learning_rate="auto",
             random_state=0).fit_transform(flat[:n])
    return time.perf_counter() - t0, time.process_time() - c0, y


def umap_section(repeats: int, fresh_runs: int = 3) -> None:
    from sklearn.manifold import trustworthiness

    from analysis.projection import pca, project_layers

    states = natural_states()
    flat = states.reshape(-1, states.shape[-1]).astype(np.float64)  # [3584, 384]
    states_file = tempfile.NamedTemporaryFile(suffix=".npy", delete=False).name
    np.save(states_file, states)
    load = [os.getloadavg()]
    rows, layouts = [], {}
    ours = [fresh("ours", states_file) for _ in range(fresh_runs)]
    layouts["ours, seed 0"] = ours[0][1]
    rows.append(("ours, first UMAP in a fresh process", [t for t, _ in ours]))
    page = [fresh("page", states_file)[0] for _ in range(fresh_runs)]
    rows.append(("ours, the Embeddings page in a fresh process: choose UMAP → figure "
                 "(AppTest)", page))
    with tempfile.TemporaryDirectory(prefix="numba-") as cache:
        cold = fresh("umap-learn", states_file, cache)
        warm = fresh("umap-learn", states_file, cache)
    layouts["umap-learn, seed 0"] = cold[1]
    rows.append(("umap-learn, fresh process, empty numba cache (a fresh server)", [cold[0]]))
    rows.append(("umap-learn, fresh process, numba cache filled by the run above", [warm[0]]))
    again = []
    for r in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        coords, _ = project_layers(states, "UMAP", 2, seed=r % 3)
        again.append({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0})
        layouts.setdefault(f"ours, seed {r % 3}", coords.reshape(-1, 2))
    rows.append((f"ours, again in the same process ({repeats}×)", again))
    tsne = {}
    for n in (1500, len(flat)):
        wall, cpu, y = _tsne(flat, n)
        tsne[n] = (wall, cpu, trustworthiness(flat[:n], y, n_neighbors=15))
    layouts["PCA (reference)"] = pca(flat, 2).coords
    load.append(os.getloadavg())
    os.unlink(states_file)
    _report(rows, layouts, tsne, flat, load)


def _report(rows, layouts, tsne, flat, load) -> None:
    from sklearn.manifold import trustworthiness

    print(f"MiniLM, natural text cut to 512 tokens × 7 layers = {len(flat):,} points of 384; "
          f"load average before {load[0][0]:.2f}/{load[0][1]:.2f}/{load[0][2]:.2f}, after "
          f"{load[1][0]:.2f}/{load[1][1]:.2f}/{load[1][2]:.2f} (1/5/15 min)\n")
    print("| first UMAP | wall, median (s) | CPU, median (s) | runs | of which `import umap` (s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, ts in rows:
        wall = statistics.median(t["wall_s"] for t in ts)
        cpu = statistics.median(t["cpu_s"] for t in ts)
        imp = statistics.median(t.get("import_s", 0.0) for t in ts)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {len(ts)} | {imp:.1f} |")
    print("\n| t-SNE (scikit-learn) | wall (s) | CPU (s) | trustworthiness |")
    print("| --- | ---: | ---: | ---: |")
    for n, (wall, cpu, trust) in tsne.items():
        print(f"| {n:,} points | {wall:.1f} | {cpu:.1f} | {trust:.4f} |")
    print("\n| layout of the 3,584 points | trustworthiness (15 neighbours) |")
    print("| --- | ---: |")
    for name, y in layouts.items():
        print(f"| {name} | {trustworthiness(flat, y, n_neighbors=15):.4f} |")


if __name__ == "__main__":
    child(*sys.argv[1:4])
