"""Decoder-lab benchmark (issue 17): activation patching and generation, side by side with
TransformerLens 3.x (`transformer_lens.HookedTransformer`, used here only) on the SAME tiny
GPT-2 weights.

The weights: a random GPT-2 (d_model 64, 2 layers, 4 heads, d_mlp 256, 256 positions, a small
byte-level BPE vocabulary), saved as a Hugging Face directory. Ours loads that directory; TL
gets the same Hugging Face state through its own `convert_gpt2_weights`, with no folding or
centring (so both compute the same function). The logits are compared first and the max
difference reported.

  patch_ours   analysis.patching.residual_patching: every (row, position) of the residual
               stream, n_layers + 1 rows (block inputs and the last block's output), batched
  patch_tl     transformer_lens.patching.get_act_patch_resid_pre: TL's own loop, one
               run_with_hooks per (layer, position), n_layers rows (resid_pre)
  induction    ours on the bundled tiny-induction, at its whole context (48 tokens: the
               model reads no more), the induction preset's pair
  gen_ours     analysis.generation.generate_ids, 200 greedy tokens (no KV cache, a full pass
               per step, as the page shows), on tiny-chars and on the bench GPT-2
  gen_tl       HookedTransformer.generate, 200 greedy tokens on the bench GPT-2, with and
               without TL's KV cache (a reference point)

The grids are compared on their common rows (both normalised the same way: 0 = corrupted,
1 = clean, the logit difference of the same two tokens at the last position).
After one warm-up, each variant runs --repeats times in an order rotated per repeat;
median and min are reported. `uptime` is recorded before and after (other jobs share the
machine).

    HF_HUB_OFFLINE=1 python bench/bench_decoder_lab.py [--tokens 64] [--repeats 5]
        [--threads 2] [--out bench/out/decoder_lab.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

from analysis.generation import generate_ids  # noqa: E402
from analysis.patching import induction_pair, prepare_ids, residual_patching  # noqa: E402
from model import load_model  # noqa: E402
from tests.tiny_models import _bpe_tokenizer, _save, _save_tokenizer  # noqa: E402
from timing import timed  # noqa: E402

D_MODEL, N_LAYERS, N_HEADS, D_MLP, N_CTX = 64, 2, 4, 256, 256


def make_bench_gpt2(directory: Path) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    directory.mkdir(parents=True, exist_ok=True)
    tok = _bpe_tokenizer(["<|endoftext|>"], None)
    _save_tokenizer(tok, directory, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    eos = tok.token_to_id("<|endoftext|>")
    cfg = GPT2Config(vocab_size=tok.get_vocab_size(), n_embd=D_MODEL, n_layer=N_LAYERS,
                     n_head=N_HEADS, n_inner=D_MLP, n_positions=N_CTX, bos_token_id=eos,
                     eos_token_id=eos)
    torch.manual_seed(0)
    return _save(GPT2LMHeadModel(cfg), directory)


def tl_model(directory: Path):
    """The same weights in TransformerLens, unfolded and uncentred."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformer_lens.pretrained.weight_conversions import convert_gpt2_weights
    from transformers import GPT2LMHeadModel

    hf = GPT2LMHeadModel.from_pretrained(directory).eval()
    c = hf.config
    cfg = HookedTransformerConfig(
        n_layers=c.n_layer, d_model=c.n_embd, n_ctx=c.n_positions, n_heads=c.n_head,
        d_head=c.n_embd // c.n_head, d_mlp=c.n_inner, d_vocab=c.vocab_size, act_fn="gelu_new",
        normalization_type="LN", positional_embedding_type="standard", eps=c.layer_norm_epsilon,
        default_prepend_bos=False, device="cpu")
    model = HookedTransformer(cfg)
    model.load_and_process_state_dict(
        convert_gpt2_weights(hf, cfg), fold_ln=False, center_writing_weights=False,
        center_unembed=False, fold_value_biases=False, refactor_factored_attn_matrices=False)
    return model.eval()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def patching_side_by_side(ours, tl, n_tokens: int, repeats: int) -> dict:
    from transformer_lens.patching import get_act_patch_resid_pre

    clean, corrupted = induction_pair(n_tokens // 2, ours.cfg.d_vocab, seed=0)  # [pos] each
    p = prepare_ids(ours, clean, corrupted)  # the metric: logit diff at the last position
    with torch.no_grad():
        ours_logits = ours.run_ids(clean[None]).logits  # [1, pos, vocab]
        tl_logits = tl(clean[None])  # [1, pos, vocab]
    agree = float((ours_logits - tl_logits).abs().max())
    _, clean_cache = tl.run_with_cache(clean[None])

    def metric(logits):  # [1, pos, vocab] -> normalised logit difference
        raw = logits[0, p.position, p.answer] - logits[0, p.position, p.wrong]
        return (raw - p.corrupted_value) / (p.clean_value - p.corrupted_value)

    def run_tl():
        with torch.no_grad():
            return get_act_patch_resid_pre(tl, corrupted[None], clean_cache, metric)  # tqdm bar

    def run_ours():
        return residual_patching(prepare_ids(ours, clean, corrupted))

    results = {}
    for name, fn in (("patch_ours", run_ours), ("patch_tl", run_tl)):
        print(name, file=sys.stderr, flush=True)
        times, grid = timed(fn, repeats)
        results[name] = dict(times=times, shape=list(grid.shape))
        results[name + "_grid"] = torch.as_tensor(grid, dtype=torch.float64)
    diff = (results.pop("patch_ours_grid")[:N_LAYERS] - results.pop("patch_tl_grid")).abs().max()
    results["logits_max_diff"] = agree
    results["grid_max_diff"] = float(diff)
    return results


def generation_side_by_side(ours, tl, chars, n_new: int, repeats: int) -> dict:
    prompt = torch.tensor([5, 17, 42, 8, 99, 23, 61, 7])  # [8]
    prompt_chars = chars.encode("The cat sat on the mat").input_ids[0]  # [pos]
    results = {}

    def ours_gpt2():
        return generate_ids(ours, prompt, n_new).ids

    def ours_chars():
        return generate_ids(chars, prompt_chars, n_new).ids

    def tl_gen(cache: bool):
        def run():
            with torch.no_grad():
                return tl.generate(prompt[None], max_new_tokens=n_new, do_sample=False,
                                   use_past_kv_cache=cache, verbose=False,
                                   stop_at_eos=False)[0].tolist()
        return run

    for name, fn in (("gen_ours_chars", ours_chars), ("gen_ours_gpt2", ours_gpt2),
                     ("gen_tl_gpt2_kv", tl_gen(True)), ("gen_tl_gpt2_nokv", tl_gen(False))):
        print(name, file=sys.stderr, flush=True)
        try:
            times, ids = timed(fn, repeats)
        except RuntimeError as exc:  # TL's own limits: recorded, not hidden
            results[name] = dict(error=str(exc)[:200])
            results[name + "_ids"] = None
            continue
        results[name] = dict(times=times, n_new=len(ids) - (len(prompt_chars) if "chars" in name
                                                             else len(prompt)))
        results[name + "_ids"] = ids
    ours_ids = results.pop("gen_ours_gpt2_ids")
    for name in ("gen_tl_gpt2_kv", "gen_tl_gpt2_nokv"):
        results[f"same_greedy_ids_{name}"] = results.pop(name + "_ids") == ours_ids
    results.pop("gen_ours_chars_ids")
    return results


def induction_time(n_tokens: int, repeats: int) -> dict:
    lm = load_model("tiny-induction")
    n = min(n_tokens, lm.cfg.n_ctx)
    clean, corrupted = induction_pair(n // 2, 36, seed=0)

    def run():
        return residual_patching(prepare_ids(lm, clean, corrupted))

    times, grid = timed(run, repeats)
    return {"induction": dict(times=times, shape=list(grid.shape), tokens=n)}


def table(results: dict) -> str:
    rows = ["| what | grid / tokens | median s | min s |", "| --- | --- | --- | --- |"]
    for name, r in results.items():
        if isinstance(r, dict) and "times" in r:
            what = r.get("shape") or f"{r.get('n_new')} new tokens"
            rows.append(f"| {name} | {what} | {statistics.median(r['times']):.3f} | "
                        f"{min(r['times']):.3f} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--new", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench/out/decoder_lab.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    before = uptime()
    with tempfile.TemporaryDirectory() as tmp:
        directory = make_bench_gpt2(Path(tmp) / "gpt2")
        ours, tl = load_model(str(directory)), tl_model(directory)
        results = patching_side_by_side(ours, tl, args.tokens, args.repeats)
        results.update(induction_time(args.tokens, args.repeats))
        results.update(generation_side_by_side(ours, tl, load_model("tiny-chars"), args.new,
                                               args.repeats))
    after = uptime()
    import transformer_lens  # noqa: F401  (its version, for the record)
    from importlib.metadata import version
    meta = dict(machine=platform.platform(), cpu=platform.processor() or platform.machine(),
                cores=os.cpu_count(), threads=args.threads, torch=torch.__version__,
                transformer_lens=version("transformer-lens"), date=time.strftime(
                    "%Y-%m-%d %H:%M UTC", time.gmtime()), uptime_before=before,
                uptime_after=after, tokens=args.tokens, repeats=args.repeats)
    print(table(results))
    print({k: v for k, v in results.items() if not isinstance(v, dict)})
    print(meta)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(meta=meta, results=results), indent=1))


if __name__ == "__main__":
    main()
