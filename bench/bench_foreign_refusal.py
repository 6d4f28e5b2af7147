"""How fast, and with how little memory, a huge model only Hugging Face's code runs is refused.

Writes a tiny random-weight BLOOM folder and two huge configs beside a 4-byte weights file
(BLOOM at hidden 8,192 × 64 layers, ~53.6 B parameters; Mixtral at 8 experts × 56 layers,
~140 B), then, in a fresh process for each, times `load_model(folder, foreign=True)` until its
refusal and reads the resident memory (/proc/self/statm) before and after. "import":
transformers' model machinery imported first (any loaded model has it); "cold": the
first refusal (the family's model code imported during it); "warm": the same again.

    python bench/bench_foreign_refusal.py [--root /tmp/foreign-refusal]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HUGE = {
    "bloom": dict(hidden_size=8192, n_layer=64, n_head=64, vocab_size=250880),
    "mixtral": dict(model_type="mixtral", architectures=["MixtralForCausalLM"],
                    hidden_size=6144, intermediate_size=16384, num_hidden_layers=56,
                    num_attention_heads=48, num_key_value_heads=8, num_local_experts=8,
                    num_experts_per_tok=2, vocab_size=32000),
}
CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
from model import ModelLoadError, load_model
from model.allocator import rss_bytes
before, start = rss_bytes(), time.perf_counter()
import transformers.modeling_utils, transformers.models.auto.modeling_auto  # noqa: E401
rows = [dict(run="import", seconds=time.perf_counter() - start,
             rss_rise_mb=(rss_bytes() - before) / 2**20, message="transformers imported")]
for label in ("cold", "warm"):
    before, start = rss_bytes(), time.perf_counter()
    try:
        load_model({folder!r}, foreign=True)
        said = "loaded"
    except ModelLoadError as exc:
        said = str(exc)
    rows.append(dict(run=label, seconds=time.perf_counter() - start,
                     rss_rise_mb=(rss_bytes() - before) / 2**20, message=said))
print(json.dumps(rows))
"""


def write_folders(root: Path) -> dict[str, Path]:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
    import tiny_foreign

    tiny = tiny_foreign.make_bloom(root / "tiny-bloom")
    folders = {}
    for name, sizes in HUGE.items():
        folder = root / name
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(tiny, folder)
        data = json.loads((folder / "config.json").read_text())
        data.update(sizes)
        (folder / "config.json").write_text(json.dumps(data))
        (folder / "model.safetensors").write_bytes(b"\0" * 4)
        folders[name] = folder
    return folders


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, default=Path("/tmp/foreign-refusal"))
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    for name, folder in write_folders(args.root).items():
        out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT),
                                                                 folder=str(folder))],
                             env=env, capture_output=True, text=True, check=True)
        for row in json.loads(out.stdout.strip().splitlines()[-1]):
            print(f"{name:8} {row['run']:6} {row['seconds']:.3f} s  RSS +{row['rss_rise_mb']:.0f} "
                  f"MB  {row['message'][:110]}")


if __name__ == "__main__":
    main()
