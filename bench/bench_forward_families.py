"""Forward-pass benchmark of the decoder families (issue 28): ours against Hugging Face eager
on the same random-weight config, at one length.

For each family a random model of Pythia-70m's shape (d_model 512, 8 heads, 6 layers, d_mlp
2048; grouped-query, windows, caps and partial rotary where the family has them; a vocabulary
of 2,048 to keep the head small) is built by transformers, converted by our converter, and
timed interleaved repeat by repeat (the order alternates):

  hf     HF eager forward of the ids, output_attentions + output_hidden_states, inference_mode
  ours   LoadedModel.run_ids(ids): the full trace (every hook point cached)

The ratio is the median of per-repeat ratios ours / hf. Before timing, every attention pattern
and hidden state is compared (max abs difference), so both sides compute the same thing.

    HF_HUB_OFFLINE=1 python bench/bench_forward_families.py [--tokens 512] [--repeats 10]
        [--threads 1] [--families gpt_neox qwen2 ...] [--out bench/out/forward_families.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

from bench_forward import machine_info, machine_line  # noqa: E402
from timing import against, interleaved  # noqa: E402
from model.allocator import keep_freed_memory  # noqa: E402
from model.convert import CONVERTERS  # noqa: E402
from model.convert_decoders import DECODER_CONVERTERS  # noqa: E402
from model.loading import build_model  # noqa: E402
from model.registry import config_from_hf  # noqa: E402
from model.runner import LoadedModel  # noqa: E402

BASE = dict(vocab_size=2048, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
            intermediate_size=2048, max_position_embeddings=1024)
WINDOW = 128  # shorter than the input, so sliding layers really slide
GQA = dict(num_key_value_heads=2)
FAMILIES = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_inner=2048)),  # the pre-LN reference
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", dict(rope_parameters={
        "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25})),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", GQA),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(GQA, head_dim=64)),
    "llama3": ("LlamaConfig", "LlamaForCausalLM", dict(GQA, rope_parameters={
        "rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 256})),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(GQA, sliding_window=WINDOW)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(GQA, head_dim=64)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(GQA, head_dim=64,
                                                         sliding_window=WINDOW)),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(GQA, head_dim=64,
                                                             sliding_window=WINDOW)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(GQA, sliding_window=WINDOW, pad_token_id=0)),
    "opt": ("OPTConfig", "OPTForCausalLM", dict(ffn_dim=2048, word_embed_proj_dim=512)),
    "gpt_neo": ("GPTNeoConfig", "GPTNeoForCausalLM", dict(
        num_layers=6, num_heads=8, attention_types=[[["global", "local"], 3]],
        window_size=WINDOW)),
}


class IdTokens:
    """run_ids needs only token strings for the trace; ids stand in for them."""

    special_ids = ()

    def tokens(self, row):
        return [str(i) for i in row]


def build(family: str):
    import transformers

    config_name, model_name, extra = FAMILIES[family]
    settings = dict(BASE, **extra)
    if family == "gpt_neo":
        settings = {k: v for k, v in settings.items()
                    if k not in ("num_hidden_layers", "num_attention_heads")}
    if family == "opt":
        settings.pop("intermediate_size")
    config = getattr(transformers, config_name)(**settings)
    torch.manual_seed(0)
    hf = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    hf = hf.eval()
    cfg = config_from_hf(config.to_dict())
    state = {k: v.detach().clone() for k, v in hf.state_dict().items()}
    ours = build_model(cfg, {**CONVERTERS, **DECODER_CONVERTERS}[cfg.family](state, cfg))
    keep_freed_memory()  # as load_model does: freed trace memory is reused, not returned
    return hf, LoadedModel(family, ours, IdTokens(), torch.device("cpu"))


def verify(hf, lm, ids: torch.Tensor) -> dict:
    trace = lm.run_ids(ids)
    with torch.inference_mode():
        out = hf(input_ids=ids[None], output_attentions=True, output_hidden_states=True)
    n = lm.cfg.n_layers
    attn = max(float((trace.cache[f"blocks.{i}.attn.hook_pattern"] - out.attentions[i])
                     .abs().max()) for i in range(n))
    hidden = max(float((trace.cache[f"blocks.{i}.hook_resid_pre"] - out.hidden_states[i])
                       .abs().max()) for i in range(n))
    logits = float((trace.logits - out.logits).abs().max())
    if attn > 1e-4 or hidden > 1e-3:
        raise RuntimeError(f"ours and HF disagree: attentions {attn}, hidden {hidden}")
    return {"attentions": attn, "hidden_states": hidden, "logits": logits}


def bench(family: str, n_tokens: int, repeats: int, warmup: int) -> dict:
    hf, lm = build(family)
    ids = torch.randint(0, BASE["vocab_size"], (n_tokens,), generator=torch.Generator()
                        .manual_seed(1))
    check = verify(hf, lm, ids)

    def run_hf():
        with torch.inference_mode():
            return hf(input_ids=ids[None], output_attentions=True, output_hidden_states=True)

    calls = {"hf": run_hf, "ours": lambda: lm.run_ids(ids)}
    times = interleaved(calls, repeats, warmup)
    return {"family": family, "n_params": sum(p.numel() for p in hf.parameters()),
            "verify": check, **against(times), "raw": times}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "forward_families.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    machine = machine_info(args.threads)
    machine["loadavg_before"] = os.getloadavg()
    results = [bench(f, args.tokens, args.repeats, args.warmup) for f in args.families]
    machine["loadavg_after"] = os.getloadavg()
    lines = [f"Machine: {machine_line(machine)}; load average {machine['loadavg_before'][0]:.1f}"
             f" → {machine['loadavg_after'][0]:.1f}. {args.tokens} tokens, median of "
             f"{args.repeats} interleaved repeats.", "",
             "| family | parameters | HF eager ms | ours ms (full trace) | ours / HF | "
             "quartiles of ours / HF | "
             "max diff patterns / hidden |", "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        v = r["verify"]
        lines.append(f"| {r['family']} | {r['n_params'] / 1e6:.1f} M | {r['hf_ms']:.0f} | "
                     f"{r['ours_ms']:.0f} | {r['ratio']:.3f} | "
                     f"{r['spread'][0]:.2f}–{r['spread'][1]:.2f} | "
                     f"{v['attentions']:.1e} / {v['hidden_states']:.1e} |")
    table = "\n".join(lines)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "forward_families", "args": {k: str(v) for k, v in vars(args).items()},
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine,
        "results": results, "markdown": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
