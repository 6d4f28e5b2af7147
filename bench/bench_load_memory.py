"""Peak memory while loading a ~1 B-parameter half-precision checkpoint.

Writes a random-weight Llama-style checkpoint of about 0.95 B parameters in bfloat16 (hidden
2048, 16 layers, MLP 5632, vocabulary 32,000, untied head; 1.9 GB on disk) with the bundled
MiniLM's tokenizer beside it, then loads it with `load_model` in a fresh process and reports
that process's peak resident memory (ru_maxrss): the whole peak, and the rise over the process
before the load (torch and transformers imported). The goal: peak ≤ 1.3 × the float32 model.

    python bench/bench_load_memory.py [--root /tmp/bf16-1b] [--repo-root DIR]

--repo-root runs the load with another checkout's code (e.g. the code before a change), for a
before/after pair on the same checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=2048,
              intermediate_size=5632, num_hidden_layers=16, num_attention_heads=16,
              num_key_value_heads=16, vocab_size=32000, max_position_embeddings=2048,
              rms_norm_eps=1e-6, tie_word_embeddings=False, torch_dtype="bfloat16",
              hidden_act="silu", rope_theta=10000.0)

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import torch, transformers  # noqa: F401 - the baseline includes them
from model import load_model
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * 4096
before = rss()
start = time.perf_counter()
lm = load_model(sys.argv[2], device="cpu")
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
params = sum(p.numel() for p in lm.model.parameters())
print(json.dumps({"before": before, "peak": peak, "after": rss(), "params": params,
                  "seconds": seconds, "dtype": str(next(lm.model.parameters()).dtype)}))
"""


def write_checkpoint(directory: Path) -> int:
    import torch
    from safetensors.torch import save_file

    from model.registry import BUNDLED

    directory.mkdir(parents=True, exist_ok=True)
    c = CONFIG
    d, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    shapes = {"model.embed_tokens.weight": (v, d), "model.norm.weight": (d,),
              "lm_head.weight": (v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + f"self_attn.{n}_proj.weight": (d, d) for n in "qkvo"})
        shapes.update({p + "mlp.gate_proj.weight": (f, d), p + "mlp.up_proj.weight": (f, d),
                       p + "mlp.down_proj.weight": (d, f), p + "input_layernorm.weight": (d,),
                       p + "post_attention_layernorm.weight": (d,)})
    gen = torch.Generator().manual_seed(0)
    tensors = {k: (torch.randn(s, generator=gen) * 0.02).to(torch.bfloat16)
               for k, s in shapes.items()}
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(CONFIG))
    minilm = BUNDLED["minilm"]()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json"):
        if (minilm / name).is_file():
            shutil.copy(minilm / name, directory / name)
    return sum(t.numel() for t in tensors.values())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", type=Path, default=Path("/tmp/attention-lab-bf16-1b"))
    p.add_argument("--repo-root", type=Path, default=ROOT, help="whose model/ code loads it")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if not (args.root / "model.safetensors").is_file():
        n = write_checkpoint(args.root)
        print(f"wrote {n / 1e9:.2f} B parameters in bfloat16 to {args.root}")
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.repo_root), str(args.root)],
                         env=env, capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    fp32 = 4 * r["params"]
    gb = lambda b: f"{b / 2**30:.2f} GiB"  # noqa: E731
    print(f"code: {args.repo_root}; {r['params'] / 1e9:.3f} B parameters, float32 size "
          f"{gb(fp32)}; bf16 file {gb((args.root / 'model.safetensors').stat().st_size)}")
    print(f"RSS before load {gb(r['before'])}; peak {gb(r['peak'])} = "
          f"{r['peak'] / fp32:.2f} x float32 size; rise over before {gb(r['peak'] - r['before'])}"
          f" = {(r['peak'] - r['before']) / fp32:.2f} x; after load {gb(r['after'])}; "
          f"load {r['seconds']:.1f} s (process {time.perf_counter() - started:.1f} s); "
          f"parameters {r['dtype']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
