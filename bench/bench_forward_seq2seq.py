"""Forward-pass benchmark of the encoder-decoders (issue 28): BART, Marian and T5 (gated-GELU)
against Hugging Face eager on the same random-weight config.

Each model has t5-small's / bart-base's shape cut down to 6 + 6 layers of d_model 512, 8 heads
and d_mlp 2048, with a vocabulary of 2,048. What is timed is the run the app records after
decoding: the source (--tokens ids) through the encoder and --out-tokens decoder ids through
the decoder, teacher-forced, interleaved repeat by repeat (the order alternates):

  hf     HF eager forward (input_ids, attention_mask, decoder_input_ids), output_attentions and
         output_hidden_states, under inference_mode
  ours   Seq2SeqTransformer.forward recorded as the app records it (model.runner.record:
         every hook point in the trace, q·k, the scores and the MLP's activation recomputed on
         first read), no_grad

Greedy decoding itself is not timed (it has no HF counterpart with the same cache policy).
The ratio is the median of per-repeat ratios ours / hf. Before timing, every encoder, decoder
and cross-attention pattern is compared (max abs difference).

    HF_HUB_OFFLINE=1 python bench/bench_forward_seq2seq.py [--tokens 512] [--out-tokens 64]
        [--repeats 10] [--threads 1] [--out bench/out/forward_seq2seq.json]
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
from model.runner import record  # noqa: E402
from model.seq2seq_families import SEQ2SEQ_BUILDERS, SEQ2SEQ_CONVERTERS  # noqa: E402
from model.seq2seq_stacks import Seq2SeqTransformer  # noqa: E402

VOCAB = 2048
BART = dict(vocab_size=VOCAB, d_model=512, encoder_layers=6, decoder_layers=6,
            encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
            decoder_ffn_dim=2048, max_position_embeddings=1024)
FAMILIES = {
    "bart": ("BartConfig", "BartForConditionalGeneration", BART),
    "marian": ("MarianConfig", "MarianMTModel", dict(BART, scale_embedding=True,
                                                     activation_function="swish",
                                                     pad_token_id=1, eos_token_id=0,
                                                     decoder_start_token_id=1)),
    "t5": ("T5Config", "T5ForConditionalGeneration", dict(
        vocab_size=VOCAB, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8,
        feed_forward_proj="gated-gelu", tie_word_embeddings=False)),
}


def build(family: str):
    import transformers

    config_name, model_name, settings = FAMILIES[family]
    config = getattr(transformers, config_name)(**settings)
    torch.manual_seed(0)
    hf = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    hf = hf.eval()
    data = config.to_dict()
    enc, dec, spec = SEQ2SEQ_BUILDERS[data["model_type"]](data)
    state = {k: v.detach().clone() for k, v in hf.state_dict().items()}
    ours = Seq2SeqTransformer(enc, dec, spec)
    ours.load_state_dict(SEQ2SEQ_CONVERTERS[data["model_type"]](state, enc, dec, spec))
    keep_freed_memory()  # as load_model does: freed trace memory is reused, not returned
    return hf, ours.eval()


def run_ours(model, src, mask, dec):
    """The app's recording of the teacher-forced run (runner.record, as Seq2SeqModel.run
    calls it after greedy decoding): every hook point of both stacks in the trace."""
    return record(model, list(model.hook_names), lambda: model(src, mask, decoder_input_ids=dec),
                  lambda: model.attention_masks(mask, dec, model.embed.W_E.weight.dtype))


def verify(hf, model, src, mask, dec) -> float:
    out, cache = run_ours(model, src, mask, dec)
    with torch.inference_mode():
        theirs = hf(input_ids=src, attention_mask=mask, decoder_input_ids=dec,
                    output_attentions=True, output_hidden_states=True)
    pairs = [(f"blocks.{i}.attn.hook_pattern", theirs.encoder_attentions[i])
             for i in range(model.cfg.n_layers)]
    for i in range(model.dec_cfg.n_layers):
        pairs += [(f"decoder.blocks.{i}.attn.hook_pattern", theirs.decoder_attentions[i]),
                  (f"decoder.blocks.{i}.cross_attn.hook_pattern", theirs.cross_attentions[i])]
    diff = max(float((cache[n] - t).abs().max()) for n, t in pairs)
    if diff > 1e-4:
        raise RuntimeError(f"ours and HF disagree: patterns differ by {diff}")
    return diff


def bench(family: str, n_src: int, n_out: int, repeats: int, warmup: int) -> dict:
    hf, model = build(family)
    gen = torch.Generator().manual_seed(1)
    src = torch.randint(3, VOCAB, (1, n_src), generator=gen)
    dec = torch.randint(3, VOCAB, (1, n_out), generator=gen)
    mask = torch.ones_like(src)
    check = verify(hf, model, src, mask, dec)

    def run_hf():
        with torch.inference_mode():
            return hf(input_ids=src, attention_mask=mask, decoder_input_ids=dec,
                      output_attentions=True, output_hidden_states=True)

    calls = {"hf": run_hf, "ours": lambda: run_ours(model, src, mask, dec)}
    times = interleaved(calls, repeats, warmup)
    return {"family": family, "n_params": sum(p.numel() for p in hf.parameters()),
            "max_pattern_diff": check, **against(times), "raw": times}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--out-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "forward_seq2seq.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    machine = machine_info(args.threads)
    machine["loadavg_before"] = os.getloadavg()
    results = [bench(f, args.tokens, args.out_tokens, args.repeats, args.warmup)
               for f in args.families]
    machine["loadavg_after"] = os.getloadavg()
    lines = [f"Machine: {machine_line(machine)}; load average {machine['loadavg_before'][0]:.1f}"
             f" → {machine['loadavg_after'][0]:.1f}. {args.tokens} source tokens, "
             f"{args.out_tokens} decoder tokens, median of {args.repeats} interleaved repeats.",
             "", "| family | parameters | HF eager ms | ours ms (full trace) | ours / HF | "
             "quartiles of ours / HF | "
             "max diff patterns |", "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        lines.append(f"| {r['family']} | {r['n_params'] / 1e6:.1f} M | {r['hf_ms']:.0f} | "
                     f"{r['ours_ms']:.0f} | {r['ratio']:.3f} | "
                     f"{r['spread'][0]:.2f}–{r['spread'][1]:.2f} | {r['max_pattern_diff']:.1e} |")
    table = "\n".join(lines)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "forward_seq2seq", "args": {k: str(v) for k, v in vars(args).items()},
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine,
        "results": results, "markdown": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
