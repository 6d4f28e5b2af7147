"""The forward pass of one family before and after a change, against Hugging Face eager, in
one process: HF, the engine at an earlier commit and the engine in this worktree take turns
repeat by repeat (bench/timing's rotation), so a machine shared with other jobs slows all three
alike. Besides wall time it reports each call's CPU time in this thread (time.thread_time),
which waiting for a core does not inflate: on a machine with a load average far above its core
count it is the fairer reading (cache contention still reaches it).

The earlier `model/` package is taken from git (`git archive <rev> model`) into a temporary
folder and imported as `model_before`; both engines record the full trace (every hook point),
as the app records it at each version: LoadedModel.run_ids for single stacks, the teacher-forced
encoder-decoder run for BART, Marian and T5 (runner.record where the version has it).

    HF_HUB_OFFLINE=1 python bench/bench_forward_before_after.py electra --before 514139f
        [--repeats 15] [--tokens 512]

Families: distilbert, electra, xlm-roberta (bench_forward_encoders' base-size checkpoints),
the decoders of bench_forward_families (mistral, ...) and bart, marian, t5
(bench_forward_seq2seq).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

import bench_forward_encoders as encoders  # noqa: E402
import bench_forward_families as decoders  # noqa: E402
import bench_forward_seq2seq as seq2seq  # noqa: E402
from bench_forward import quartiles  # noqa: E402

MODULES = ("loading", "runner", "registry", "convert", "convert_decoders", "hooks", "allocator",
           "seq2seq_families", "seq2seq_stacks")


def package_at(rev: str, into: Path) -> str:
    """`model/` as it was at git revision `rev`, importable as `model_before`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "model"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into), "--transform", "s,^model,model_before,"],
                   input=archive, check=True)
    sys.path.insert(0, str(into))
    return "model_before"


def timed_turns(calls: dict, repeats: int) -> tuple[dict, dict]:
    """(wall seconds, CPU seconds of this thread) of each call per repeat, in a rotated order,
    one untimed round first, the garbage collector run outside the timed part."""
    for fn in calls.values():
        fn()
    names = list(calls)
    wall, cpu = {n: [] for n in names}, {n: [] for n in names}
    gc.disable()
    try:
        for r in range(repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                c0, w0 = time.thread_time(), time.perf_counter()
                result = calls[name]()
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.thread_time() - c0)
                del result
                gc.collect()
    finally:
        gc.enable()
    return wall, cpu


def single_stack_calls(family: str, pkgs: dict, n_tokens: int) -> tuple[dict, dict]:
    """HF and each engine version on one encoder or decoder family; (calls, HF patterns)."""
    if family in encoders.FAMILIES:
        from transformers import AutoModel

        folder = encoders.save_random(family, Path(tempfile.mkdtemp()) / family)
        hf = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
        ids = torch.randint(5, 30522, (1, n_tokens), generator=torch.Generator().manual_seed(1))
        kwargs = dict(input_ids=ids, attention_mask=torch.ones_like(ids))
        if family != "distilbert":
            kwargs["token_type_ids"] = torch.zeros_like(ids)
        engines = {name: m["loading"].load_model(str(folder), device="cpu")
                   for name, m in pkgs.items()}
    else:
        hf, _ = decoders.build(family)  # the same seeded weights for every engine version
        ids = torch.randint(0, decoders.BASE["vocab_size"], (1, n_tokens),
                            generator=torch.Generator().manual_seed(1))
        kwargs = dict(input_ids=ids)
        config = hf.config.to_dict()
        engines = {}
        for name, m in pkgs.items():
            cfg = m["registry"].config_from_hf(config)
            state = {k: v.detach().clone() for k, v in hf.state_dict().items()}
            convert = {**m["convert"].CONVERTERS, **m["convert_decoders"].DECODER_CONVERTERS}
            model = m["loading"].build_model(cfg, convert[cfg.family](state, cfg))
            m["allocator"].keep_freed_memory()
            engines[name] = m["runner"].LoadedModel(family, model, decoders.IdTokens(),
                                                    torch.device("cpu"))

    def run_hf():
        with torch.inference_mode():
            return hf(**kwargs, output_attentions=True, output_hidden_states=True)

    calls = {"hf": run_hf}
    calls.update({name: (lambda lm: lambda: lm.run_ids(ids).cache)(lm)
                  for name, lm in engines.items()})
    patterns = {f"blocks.{i}.attn.hook_pattern": a for i, a in enumerate(run_hf().attentions)}
    return calls, patterns


def seq2seq_calls(family: str, pkgs: dict, n_tokens: int) -> tuple[dict, dict]:
    """HF and each engine version on one encoder-decoder, teacher-forced on 64 decoder ids."""
    import transformers

    config_name, model_name, settings = seq2seq.FAMILIES[family]
    config = getattr(transformers, config_name)(**settings)
    torch.manual_seed(0)
    hf = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    hf, data = hf.eval(), config.to_dict()
    gen = torch.Generator().manual_seed(1)
    src = torch.randint(3, seq2seq.VOCAB, (1, n_tokens), generator=gen)
    dec = torch.randint(3, seq2seq.VOCAB, (1, 64), generator=gen)
    mask = torch.ones_like(src)
    calls = {}
    for name, m in pkgs.items():
        enc_cfg, dec_cfg, spec = m["seq2seq_families"].SEQ2SEQ_BUILDERS[data["model_type"]](data)
        state = {k: v.detach().clone() for k, v in hf.state_dict().items()}
        model = m["seq2seq_stacks"].Seq2SeqTransformer(enc_cfg, dec_cfg, spec)
        model.load_state_dict(m["seq2seq_families"].SEQ2SEQ_CONVERTERS[data["model_type"]](
            state, enc_cfg, dec_cfg, spec))
        m["allocator"].keep_freed_memory()
        calls[name] = recorder(m, model.eval(), src, mask, dec)

    def run_hf():
        with torch.inference_mode():
            return hf(input_ids=src, attention_mask=mask, decoder_input_ids=dec,
                      output_attentions=True, output_hidden_states=True)

    out = run_hf()
    patterns = {f"blocks.{i}.attn.hook_pattern": a for i, a in enumerate(out.encoder_attentions)}
    patterns.update({f"decoder.blocks.{i}.cross_attn.hook_pattern": a
                     for i, a in enumerate(out.cross_attentions)})
    return {"hf": run_hf, **calls}, patterns


def recorder(m: dict, model, src, mask, dec):
    """The app's recording of the teacher-forced run at that version of the engine."""
    names = list(model.hook_names)
    forward = lambda: model(src, mask, decoder_input_ids=dec)  # noqa: E731
    record = getattr(m["runner"], "record", None)
    if record is not None:
        return lambda: record(model, names, forward, lambda: model.attention_masks(
            mask, dec, model.embed.W_E.weight.dtype))[1]

    def cached():  # before runner.record: every hook point stored by a caching hook
        cache: dict = {}
        with torch.no_grad(), m["hooks"].hooks(names, [(n, m["hooks"].caching_hook(cache))
                                                       for n in names]):
            forward()
        return cache
    return cached


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("family")
    p.add_argument("--before", required=True, help="git revision of the earlier engine")
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--tokens", type=int, default=512)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    before = package_at(args.before, Path(tempfile.mkdtemp()))
    pkgs = {name: {m: importlib.import_module(f"{name}.{m}") for m in MODULES}
            for name in ("model", before)}
    pkgs = {"before": pkgs[before], "after": pkgs["model"]}
    build = seq2seq_calls if args.family in seq2seq.FAMILIES else single_stack_calls
    calls, patterns = build(args.family, pkgs, args.tokens)
    after, earlier = calls["after"](), calls["before"]()
    same = max(float((after[n] - earlier[n]).abs().max()) for n in earlier)
    to_hf = max(float((after[n] - t).abs().max()) for n, t in patterns.items())
    del after, earlier
    wall, cpu = timed_turns(calls, args.repeats)
    print(f"{args.family}: {args.tokens} tokens, {args.repeats} repeats, 1 thread, load average "
          f"{os.getloadavg()[0]:.1f}; after vs before, every hook: max abs diff {same:.1e}; "
          f"after vs HF patterns: {to_hf:.1e}")
    for label, times in (("wall", wall), ("CPU", cpu)):
        for name in ("before", "after"):
            ratios = [o / h for o, h in zip(times[name], times["hf"])]
            low, high = quartiles(ratios)
            print(f"| {args.family} | {label} | {name} | "
                  f"{1000 * statistics.median(times['hf']):.0f} | "
                  f"{1000 * statistics.median(times[name]):.0f} | "
                  f"{statistics.median(ratios):.3f} | {low:.2f}–{high:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
