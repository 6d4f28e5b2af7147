"""Activation patching for an encoder–decoder (BART, Marian, T5): a clean source and a corrupted
source of the same length in tokens; the decoder reads the same output in both runs (the one
the model wrote for the clean source: teacher forcing), so the only difference between the
runs is what the encoder made of the two sources, which the decoder reads through
cross-attention.

The metric is a logit difference at one decoder position (by default the position where the
two sources' scores differ most): the clean run's top token minus the corrupted run's. It is
normalised as analysis/patching.py does: 0 = the corrupted run, 1 = the clean run.

- `encoder_residual_patching` [enc_layers + 1, src_pos]: the encoder's residual stream at one
  (layer, source position) put back from the clean run; the encoder runs on from there.
- `decoder_head_patching` -> (self [layers, heads], cross [layers, heads]): one decoder head's
  output (all positions) put back. The decoder's own tokens are the same in both runs, so a
  self-attention head differs only through what cross-attention brought in before it.
- `decoder_residual_patching` [dec_layers + 1, out_pos]: the decoder's residual stream at one
  (layer, decoder position) put back.

Every patch is a hook during one run; the shared model never changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from model.hook_names import hook_names
from model.run import encode_source, run_with_hooks

from .cost import seq2seq_chunk
from .patch_sweep import Progress, counter, put_back, put_back_hook, sweep
from .patching import MAX_GRID_CELLS, MAX_PATCH_TOKENS, MIN_GAP, default_pair
from .seq2seq_runs import as_row, decoder_names, is_seq2seq

MAX_OUT_TOKENS = 64  # decoder positions patched


@dataclass
class Seq2SeqPatching:
    loaded: object
    clean_ids: torch.Tensor  # [1, src_pos]
    corrupted_ids: torch.Tensor  # [1, src_pos]
    dec_ids: torch.Tensor  # [1, out_pos], the decoder's input in both runs
    clean: dict[str, torch.Tensor]  # hook name -> [1, ...] (encoder and decoder)
    corrupted: dict[str, torch.Tensor]
    position: int  # decoder position where the metric is read
    answer: int
    wrong: int
    clean_value: float
    corrupted_value: float

    @property
    def n_src(self) -> int:
        return self.clean_ids.shape[1]

    def normalise(self, raw):
        return (raw - self.corrupted_value) / (self.clean_value - self.corrupted_value)


def _keep(loaded) -> set[str]:
    enc, dec = hook_names(loaded.cfg), decoder_names(loaded)
    n_dec = loaded.model.dec_cfg.n_layers
    return {*enc.every_layer("resid", "pre"), *enc.every_layer("resid", "post"),
            *enc.every_layer("attn", "z"), *dec.resid_rows(), *dec.every_layer("attn", "z"),
            *(dec.cross_attn(layer, "z") for layer in range(n_dec))}


def _full_run(loaded, src: torch.Tensor, dec: torch.Tensor):
    """(logits [1, out_pos, vocab], cache) of one run with the activations patching reads."""
    out, cache = run_with_hooks(loaded, src, decoder_ids=dec, keep=_keep(loaded))
    return out.decoder_logits, cache


def _metric(p: Seq2SeqPatching, logits: torch.Tensor) -> torch.Tensor:
    pair = logits[:, p.position][:, [p.answer, p.wrong]].double()  # [batch, 2]
    return (pair[:, 0] - pair[:, 1]).cpu()  # [batch]


def _check(loaded, src, bad, dec) -> None:
    if not is_seq2seq(loaded):
        raise ValueError("this patching is for encoder–decoders")
    if src.shape[1] != bad.shape[1]:
        raise ValueError(f"The clean source is {src.shape[1]} tokens long and the corrupted "
                         f"one {bad.shape[1]}: they must have the same number of tokens, so "
                         "that each position has a partner.")
    if src.shape[1] > min(MAX_PATCH_TOKENS, loaded.cfg.n_ctx):
        raise ValueError(f"The sources are {src.shape[1]} tokens long; patching takes at most "
                         f"{min(MAX_PATCH_TOKENS, loaded.cfg.n_ctx)}. Shorten both.")
    if dec.shape[1] > MAX_OUT_TOKENS:
        raise ValueError(f"patching reads at most {MAX_OUT_TOKENS} decoder tokens")
    cfg, dec_cfg = loaded.cfg, loaded.model.dec_cfg
    cells = max((cfg.n_layers + 1) * src.shape[1], (dec_cfg.n_layers + 1) * dec.shape[1],
                dec_cfg.n_layers * dec_cfg.n_heads)
    if cells > MAX_GRID_CELLS:
        raise ValueError(f"That grid would have {cells:,} cells; patching computes at most "
                         f"{MAX_GRID_CELLS:,}. Use shorter texts or a smaller model.")


def prepare_seq2seq(loaded, clean_ids, corrupted_ids, dec_ids, position: int | None = None,
                    answer: int | None = None, wrong: int | None = None) -> Seq2SeqPatching:
    """Run both sources with the decoder reading dec_ids [out_pos]; fix the metric. position:
    default the decoder position where default_pair's logit gap is largest."""
    vocab, dev = loaded.cfg.d_vocab, loaded.device
    src = as_row(clean_ids, vocab, "clean source", dev)  # [1, src_pos]
    bad = as_row(corrupted_ids, vocab, "corrupted source", dev)  # [1, src_pos]
    dec = as_row(dec_ids, vocab, "decoder's input", dev)  # [1, out_pos]
    _check(loaded, src, bad, dec)
    clean_logits, clean = _full_run(loaded, src, dec)
    bad_logits, corrupted = _full_run(loaded, bad, dec)
    a, b = clean_logits[0].double().cpu(), bad_logits[0].double().cpu()  # [out_pos, vocab]
    if position is None:
        gaps = []
        for i in range(a.shape[0]):
            x, y = default_pair(a[i], b[i])
            gaps.append(abs(float(a[i, x] - a[i, y] - b[i, x] + b[i, y])))
        position = int(np.argmax(gaps))
    if not -a.shape[0] <= position < a.shape[0]:
        raise ValueError(f"the position must be within the decoder's {a.shape[0]} tokens")
    position %= a.shape[0]
    x, y = default_pair(a[position], b[position])
    answer, wrong = (x if answer is None else int(answer)), (y if wrong is None else int(wrong))
    if not (0 <= answer < vocab and 0 <= wrong < vocab) or answer == wrong:
        raise ValueError(f"the two tokens must be two different token ids in [0, {vocab})")
    p = Seq2SeqPatching(loaded, src, bad, dec, clean, corrupted, position, answer, wrong,
                        0.0, 0.0)
    p.clean_value = float(_metric(p, clean_logits)[0])
    p.corrupted_value = float(_metric(p, bad_logits)[0])
    if abs(p.clean_value - p.corrupted_value) < MIN_GAP:
        raise ValueError("The two sources give the decoder the same scores, so there is "
                         "nothing to recover: change the corrupted source in a way that "
                         "changes the output.")
    return p


def _decode(p: Seq2SeqPatching, memory: torch.Tensor, fwd_hooks=()) -> torch.Tensor:
    """The raw metric [batch] of the decoder over memory [batch, src_pos, d_model]."""
    mask = p.loaded.model.memory_mask(torch.ones_like(p.clean_ids), memory.dtype)  # [1, 1, 1, src]
    # the decoder is causal: the tokens after the metric's position cannot change it
    dec = p.dec_ids[:, :p.position + 1].expand(memory.shape[0], -1)  # [batch, position + 1]
    logits, _ = run_with_hooks(p.loaded, dec, stack="decoder", memory=memory, memory_mask=mask,
                               hooks=fwd_hooks)
    return _metric(p, logits)


def _chunk(p: Seq2SeqPatching, most: int, encoder: bool, allowance: int | None) -> int:
    """Patched copies per pass that fit `allowance` bytes (analysis/cost.py; the decoder reads
    up to the metric's position)."""
    return seq2seq_chunk(p.loaded.cfg, p.loaded.model.dec_cfg, p.n_src, p.position + 1, most,
                         encoder, allowance)


def encoder_residual_patching(p: Seq2SeqPatching, progress: Progress | None = None,
                              chunk: int | None = None,
                              allowance: int | None = None) -> np.ndarray:
    """[enc_layers + 1, src_pos]: row l < n is encoder block l's input, the last row the last
    block's output; each cell's patch is run through the rest of the encoder and the decoder.
    Up to `chunk` patched copies per pass (default: as many as fit `allowance` bytes of working
    memory, analysis/cost.py); progress(cells done, cells)."""
    cfg, names = p.loaded.cfg, hook_names(p.loaded.cfg)

    def run(row: int, pos: torch.Tensor) -> torch.Tensor:  # one copy per source position
        name = names.resid_row(row)
        x = put_back(p.corrupted[name].repeat(pos.numel(), 1, 1), p.clean[name], pos)
        mask = torch.ones(pos.numel(), p.n_src, dtype=torch.long, device=x.device)
        out, _ = run_with_hooks(p.loaded, resid=x, start=row, attention_mask=mask,
                                stack="encoder")  # x: [b, src_pos, d_model]
        return _decode(p, out.final)

    chunk = chunk or _chunk(p, p.n_src, True, allowance)
    grid = sweep(cfg.n_layers + 1, p.n_src, chunk, run,
                 counter(progress, (cfg.n_layers + 1) * p.n_src))
    return p.normalise(grid).numpy()


def _head_grid(p: Seq2SeqPatching, get_name: Callable[[int], str], memory, chunk: int,
               tick: Callable[[int], None]) -> np.ndarray:
    dec_cfg = p.loaded.model.dec_cfg

    def run(layer: int, heads: torch.Tensor) -> torch.Tensor:  # one copy per head
        # clean z [1, head, out_pos, d_head], up to the metric's position
        clean_z = p.clean[get_name(layer)][:, :, :p.position + 1]
        return _decode(p, memory.expand(heads.numel(), -1, -1),
                       [(get_name(layer), put_back_hook(clean_z, heads))])

    grid = sweep(dec_cfg.n_layers, dec_cfg.n_heads, chunk, run, tick)
    return p.normalise(grid).numpy()


def decoder_head_patching(p: Seq2SeqPatching, progress: Progress | None = None,
                          chunk: int | None = None,
                          allowance: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(self [dec_layers, heads], cross [dec_layers, heads]): one decoder head's output z at
    every decoder position put back from the clean run, over the corrupted source. Up to
    `chunk` heads per pass (default: as many as fit `allowance`); progress(cells done, cells)
    over both grids."""
    names, dec_cfg = decoder_names(p.loaded), p.loaded.model.dec_cfg
    chunk = chunk or _chunk(p, dec_cfg.n_heads, False, allowance)
    tick = counter(progress, 2 * dec_cfg.n_layers * dec_cfg.n_heads)
    memory = _corrupted_memory(p)
    return (_head_grid(p, lambda layer: names.attn(layer, "z"), memory, chunk, tick),
            _head_grid(p, lambda layer: names.cross_attn(layer, "z"), memory, chunk, tick))


def _corrupted_memory(p: Seq2SeqPatching) -> torch.Tensor:
    return encode_source(p.loaded, p.corrupted_ids)[0]  # [1, src_pos, d_model]


def decoder_residual_patching(p: Seq2SeqPatching, progress: Progress | None = None,
                              chunk: int | None = None,
                              allowance: int | None = None) -> np.ndarray:
    """[dec_layers + 1, out_pos]: the decoder's residual stream at one (layer, position) put
    back from the clean run (row l < n: block l's input; last row: the last block's output).
    Up to `chunk` positions per pass (default: as many as fit `allowance`); progress(cells
    done, cells)."""
    names, n_layers = decoder_names(p.loaded), p.loaded.model.dec_cfg.n_layers
    n_out, n_read = p.dec_ids.shape[1], p.position + 1
    chunk = chunk or _chunk(p, n_read, False, allowance)
    memory = _corrupted_memory(p)  # [1, src, d_model]

    def run(row: int, pos: torch.Tensor) -> torch.Tensor:  # one copy per decoder position
        name = names.resid_row(row)  # clean: [1, out_pos, d_model]
        return _decode(p, memory.expand(pos.numel(), -1, -1),
                       [(name, put_back_hook(p.clean[name], pos))])

    # a patch after the metric's position changes nothing (the decoder is causal), so those
    # cells stay at 0, the corrupted run's value
    grid = torch.full((n_layers + 1, n_out), p.corrupted_value, dtype=torch.float64)
    grid[:, :n_read] = sweep(n_layers + 1, n_read, chunk, run,
                             counter(progress, (n_layers + 1) * n_read))
    return p.normalise(grid).numpy()
