"""Forward-pass benchmark for the encoder families DistilBERT, XLM-RoBERTa and ELECTRA: ours
against Hugging Face eager on the same random-weight checkpoint, at base sizes.

bench_forward.py times the bundled MiniLM with text; this times each family on token ids
(the tokenizer is the same code on both sides), interleaved repeat by repeat:

  hf_fwd    AutoModel(attn_implementation="eager")(ids, output_attentions=True,
            output_hidden_states=True) under torch.inference_mode
  ours_fwd  load_model(folder).run_ids(ids): every hook point cached (the full trace)
  ours_app  the same with the app's keep= (ui.cache.keep_for_app: patterns, q, k, residual)

Each family's checkpoint is a random config of its real base size (distilbert-base-uncased,
xlm-roberta-base with BERT's 30,522-token vocabulary, since the vocabulary does not enter the
forward's cost, and electra-small-discriminator), saved with save_pretrained and read back
through load_model like a user's folder. The outputs are compared once (max abs difference).

    HF_HUB_OFFLINE=1 python bench/bench_forward_encoders.py [--tokens 512] [--repeats 10]
        [--threads 1] [--families distilbert electra]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench.bench_forward import app_keep, machine_info, machine_line, max_diff  # noqa: E402
from bench.timing import interleaved  # noqa: E402
from model import load_model  # noqa: E402
from model.registry import BUNDLED  # noqa: E402

BERT_BASE = dict(hidden_size=768, num_attention_heads=12, num_hidden_layers=12,
                 intermediate_size=3072, vocab_size=30522, max_position_embeddings=514)
FAMILIES = {  # family -> (transformers config class, model class, settings)
    "distilbert": ("DistilBertConfig", "DistilBertModel",
                   dict(dim=768, n_heads=12, n_layers=6, hidden_dim=3072, vocab_size=30522)),
    "xlm-roberta": ("XLMRobertaConfig", "XLMRobertaModel",
                    dict(BERT_BASE, pad_token_id=1, type_vocab_size=1)),
    "electra": ("ElectraConfig", "ElectraModel",
                dict(embedding_size=128, hidden_size=256, num_attention_heads=4,
                     num_hidden_layers=12, intermediate_size=1024, vocab_size=30522)),
}


def save_random(family: str, directory: Path) -> Path:
    """A random-weight checkpoint of the family, with MiniLM's tokenizer files beside it
    (load_model wants a tokenizer; the bench feeds ids)."""
    import transformers

    config_cls, model_cls, settings = FAMILIES[family]
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**settings))
    model.save_pretrained(directory, safe_serialization=True)
    minilm = BUNDLED["minilm"]()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json"):
        if (minilm / name).is_file():
            shutil.copy(minilm / name, directory / name)
    return directory


def bench_family(family: str, directory: Path, n_tokens: int, repeats: int) -> dict:
    from transformers import AutoModel

    lm = load_model(str(directory), device="cpu")
    hf = AutoModel.from_pretrained(str(directory), attn_implementation="eager").eval()
    torch.manual_seed(1)
    ids = torch.randint(5, 30522, (1, n_tokens))  # no padding id (0 or 1) among them
    mask, types = torch.ones_like(ids), torch.zeros_like(ids)
    hf_kwargs = dict(input_ids=ids, attention_mask=mask)
    if family != "distilbert":
        hf_kwargs["token_type_ids"] = types

    def run_hf():
        with torch.inference_mode():
            return hf(**hf_kwargs, output_attentions=True, output_hidden_states=True)

    def run_ours():
        return lm.run_ids(ids, mask, types)

    keep = app_keep()

    out, trace = run_hf(), run_ours()
    check = {"attentions": max(max_diff(trace.cache[f"blocks.{i}.attn.hook_pattern"], a)
                               for i, a in enumerate(out.attentions)),
             "last_hidden": max_diff(trace.final, out.last_hidden_state)}
    del out, trace
    calls = {"hf_fwd": run_hf, "ours_fwd": run_ours,
             "ours_app": lambda: lm.run_ids(ids, mask, types, keep=keep)}
    times = interleaved(calls, repeats)  # rotated: drift hits all three
    app_ratios = [o / h for o, h in zip(times["ours_app"], times["hf_fwd"])]
    ratios = [o / h for o, h in zip(times["ours_fwd"], times["hf_fwd"])]
    return {"family": family, "params": sum(p.numel() for p in hf.parameters()),
            "hf_ms": 1000 * statistics.median(times["hf_fwd"]),
            "ours_ms": 1000 * statistics.median(times["ours_fwd"]),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "check": check,
            "app_ms": 1000 * statistics.median(times["ours_app"]),
            "app_ratio": statistics.median(app_ratios)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families:
            directory = save_random(family, Path(tmp) / family)
            rows.append(bench_family(family, directory, args.tokens, args.repeats))
            shutil.rmtree(directory)
            gc.collect()
    print(f"Machine: {machine_line(machine_info(args.threads))}. {args.tokens} tokens, "
          f"median of {args.repeats} interleaved repeats; ratio = median of per-repeat ours/HF.")
    print("\n| family | parameters | HF eager ms | ours ms (full trace) | ours/HF (median) | "
          "min–max | ours ms (app's keep=) | ours/HF | max abs diff (attentions, last hidden) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['family']} | {r['params'] / 1e6:.0f} M | {r['hf_ms']:.0f} | "
              f"{r['ours_ms']:.0f} | {r['ratio']:.3f} | {r['ratio_min']:.2f}–{r['ratio_max']:.2f}"
              f" | {r['app_ms']:.0f} | {r['app_ratio']:.3f}"
              f" | {r['check']['attentions']:.1e}, {r['check']['last_hidden']:.1e} |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
