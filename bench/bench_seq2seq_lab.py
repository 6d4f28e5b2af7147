"""The decoder lab on an encoder-decoder of t5-small's shape (random weights; 6 + 6 layers,
d_model 512, 8 heads, d_ff 2048, vocabulary 32,128, tied head): how long Generate, Which parts
made the logit and Patching take on a ~30-token source, on the CPU with one torch thread.

  generate     analysis/seq2seq_generation.py: --new tokens, greedy (each step runs the decoder
               on the whole output so far, over the source encoded once)
  attribution  analysis/seq2seq_attribution.py at the last of --out decoder positions
  patching     analysis/seq2seq_patching.py: prepare, the encoder grid, both head grids and the
               decoder grid, with --out decoder positions

    HF_HUB_OFFLINE=1 python bench/bench_seq2seq_lab.py [--new 40] [--out 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests", ROOT / "bench"):
    sys.path.insert(0, str(extra))

import torch  # noqa: E402

from bench_forward import machine_info, machine_line  # noqa: E402

SOURCE = ("The cat sat on the mat because the afternoon sun had warmed it, and nobody "
          "wanted to move her.")
CORRUPT = SOURCE.replace("cat", "dog")


def _folder(directory: Path) -> Path:
    import transformers

    from tiny_models import _save
    from tiny_seq2seq import _tokenizer

    directory.mkdir(parents=True, exist_ok=True)
    _tokenizer(directory, t5=True)
    config = transformers.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048,
                                   num_layers=6, num_heads=8, pad_token_id=0, eos_token_id=1,
                                   decoder_start_token_id=0)
    return _save(transformers.T5ForConditionalGeneration(config), directory)


def _median(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--new", type=int, default=40)
    parser.add_argument("--out", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from analysis.seq2seq_attribution import attribute_seq2seq
    from analysis.seq2seq_generation import generate_seq2seq, source_window
    from analysis.seq2seq_patching import (decoder_head_patching, decoder_residual_patching,
                                           encoder_residual_patching, prepare_seq2seq)
    from model.loading import load_model

    with tempfile.TemporaryDirectory() as tmp:
        lm = load_model(str(_folder(Path(tmp) / "t5")), device="cpu")
    src, _ = source_window(lm, SOURCE)
    bad = lm.encode(CORRUPT).input_ids[0].tolist()
    dec = [0] + list(range(5, 5 + args.out - 1))  # [out]: teacher forced

    def patch():
        p = prepare_seq2seq(lm, src, bad, dec)
        encoder_residual_patching(p), decoder_head_patching(p), decoder_residual_patching(p)

    print(machine_line(machine_info(args.threads)))
    print(f"t5-small shape, random weights; source {len(src)} tokens; torch threads "
          f"{args.threads}; median of {args.repeats}")
    t = _median(lambda: generate_seq2seq(lm, src, args.new), args.repeats)
    print(f"generate {args.new} tokens (greedy): {t:.2f} s ({t / args.new * 1000:.0f} ms/step)")
    t = _median(lambda: attribute_seq2seq(lm, src, dec, -1), args.repeats)
    print(f"attribution at one of {args.out} decoder positions: {t * 1000:.0f} ms")
    t = _median(patch, args.repeats)
    print(f"patching, every grid ({len(src)} source, {args.out} decoder tokens): {t:.2f} s")


if __name__ == "__main__":
    main()
