"""Generation step by step for an encoder–decoder (BART, Marian, T5): the encoder reads the
source (the sidebar's text) once; the decoder starts from its start token and writes one token
at a time, greedy or sampled exactly as analysis/generation.py does for decoders (`choose`).

Each step records what a decoder step does: the 10 likeliest next tokens, the chosen one, and
where the newest decoder token looked, both over the output so far (self-attention) and over
the source (cross-attention), for every layer and head. Each step runs the decoder on the whole
output so far (no cache), over the encoder's output computed once.

The start token, the end tokens and a forced first token come from the model's
generation_config.json when it has one (analysis/generation_config.py), else from config.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from model.run import encode_source, run_with_hooks

from .generation import TOP_SHOWN, Generation, Sampling, Step, check_new_tokens, choose
from .generation_config import GenerationDefaults
from .seq2seq_runs import as_row, decoder_names, is_seq2seq, start_ids

MAX_SOURCE_TOKENS = 256


@dataclass
class Seq2SeqGeneration(Generation):
    """A Generation whose prompt is the decoder's start token; `steps[i].attention` is the
    decoder's self-attention row, `cross[i]` [layer, head, src_pos] its row over the source."""

    source_ids: list[int] = field(default_factory=list)
    source_tokens: list[str] = field(default_factory=list)
    cross: list[torch.Tensor] = field(default_factory=list)
    forced_first: bool = False  # the first token was forced (forced_bos_token_id)
    settings_from: dict[str, str] = field(default_factory=dict)  # start, end -> which file


@dataclass(frozen=True)
class Seq2SeqStart:
    """The decoder's start token, its end tokens and an optional forced first token."""

    start: int
    eos: tuple[int, ...]
    forced_first: int | None = None
    settings_from: tuple[tuple[str, str], ...] = ()  # ("start token", "config.json"), ...


def seq2seq_start(loaded, defaults: GenerationDefaults | None = None) -> Seq2SeqStart:
    """The start, end and forced first token: generation_config.json's where it sets them."""
    d = defaults or GenerationDefaults()
    first, end = start_ids(loaded)
    own = "config.json" if hasattr(loaded.model, "spec") else "the model's own tokenizer"
    start, start_from = first, own
    if d.decoder_start_token_id is not None:
        start, start_from = d.decoder_start_token_id, "generation_config.json"
    eos, eos_from = (end,), own
    if d.eos_token_ids:
        eos, eos_from = d.eos_token_ids, "generation_config.json"
    where = [("start token", start_from), ("end token", eos_from)]
    if d.forced_bos_token_id is not None:
        where.append(("forced first token", "generation_config.json"))
    return Seq2SeqStart(start, tuple(eos), d.forced_bos_token_id, tuple(where))


def _rows(cache: dict, names, n_layers: int, cross: bool) -> torch.Tensor:
    """[layer, head, k_pos]: the last decoder position's attention row in every layer."""
    get = names.cross_attn if cross else names.attn
    return torch.stack([cache[get(layer, "pattern")][0, :, -1].float().cpu()
                        for layer in range(n_layers)])


def _check(loaded, n_new: int, n_src: int) -> None:
    if not is_seq2seq(loaded):
        raise ValueError("this generation is for encoder–decoders")
    check_new_tokens(n_new)
    limit = min(MAX_SOURCE_TOKENS, loaded.cfg.n_ctx)
    if n_src > limit:
        raise ValueError(f"the source is {n_src} tokens long; generation takes at most {limit}. "
                         "Shorten the text.")


def generate_seq2seq(loaded, source_ids, n_new: int, sampling: Sampling = Sampling(),
                     start: Seq2SeqStart | None = None) -> Seq2SeqGeneration:
    """Encode source_ids [src_pos] once, then write up to `n_new` tokens (fewer when the
    decoder's context ends first), stopping after an end token."""
    src = as_row(source_ids, loaded.cfg.d_vocab, "source", loaded.device)  # [1, src_pos]
    _check(loaded, n_new, src.shape[1])
    start = start or seq2seq_start(loaded)
    dec_cfg, names = loaded.model.dec_cfg, decoder_names(loaded)
    memory, memory_mask = encode_source(loaded, src)
    keep = set(names.every_layer("attn", "pattern")) | {
        names.cross_attn(layer, "pattern") for layer in range(dec_cfg.n_layers)}
    gen = torch.Generator().manual_seed(sampling.seed)
    ids, steps, cross, ended = [start.start], [], [], False
    for _ in range(min(n_new, dec_cfg.n_ctx - 1)):
        dec = torch.tensor([ids], dtype=torch.long, device=loaded.device)  # [1, out_pos]
        logits, cache = run_with_hooks(loaded, dec, stack="decoder", memory=memory,
                                       memory_mask=memory_mask, keep=keep)
        choice = choose(logits[0, -1].float().cpu(), sampling, gen)
        if len(ids) == 1 and start.forced_first is not None:  # as HF's forced BOS processor
            choice.chosen = start.forced_first
        top = torch.topk(choice.probs, min(TOP_SHOWN, choice.probs.numel()))
        steps.append(Step(
            position=len(ids) - 1, window_start=0, top_ids=top.indices.tolist(),
            top_probs=top.values.tolist(), top_kept=choice.kept[top.indices].tolist(),
            chosen=choice.chosen, chosen_prob=float(choice.probs[choice.chosen]),
            kept_mass=choice.kept_mass, cut_top_k=choice.cut_top_k, cut_top_p=choice.cut_top_p,
            n_kept=int(choice.kept.sum()),
            attention=_rows(cache, names, dec_cfg.n_layers, cross=False)))
        cross.append(_rows(cache, names, dec_cfg.n_layers, cross=True))  # [layer, head, src]
        ids.append(choice.chosen)
        if choice.chosen in start.eos:
            ended = True
            break
    tok = loaded.tokenizer
    src_list = src[0].tolist()
    return Seq2SeqGeneration(
        prompt_ids=[start.start], ids=ids, tokens=tok.tokens(ids),
        new_text=tok.decode(ids[1:]), steps=steps, sampling=sampling, stopped_at_end=ended,
        source_ids=src_list, source_tokens=tok.tokens(src_list), cross=cross,
        forced_first=start.forced_first is not None, settings_from=dict(start.settings_from))


def source_window(loaded, text: str) -> tuple[list[int], int]:
    """The source's token ids as every page reads them (special tokens included), cut to
    MAX_SOURCE_TOKENS; returns (ids, how many tokens were left out at the end)."""
    enc = loaded.encode(text)
    n = int(enc.attention_mask[0].sum())
    ids = enc.input_ids[0, :n].tolist()
    limit = min(MAX_SOURCE_TOKENS, loaded.cfg.n_ctx)
    return ids[:limit], max(0, n - limit) + enc.n_dropped[0]
