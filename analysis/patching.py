"""Activation patching: run a corrupted prompt, put back one piece of the clean run, and see
how much of the clean behaviour comes back.

The clean and corrupted prompts have the same number of tokens, so every activation of one
has a partner in the other. The metric, for a decoder, is a logit difference between two
tokens at one position (by default the last): the clean prediction minus the corrupted one.
For an encoder (or a decoder loaded without its head) it is the mean cosine of each final
vector with the clean run's. It is normalised: 0 = the corrupted run, 1 = the clean run.

- `residual_patching`: the residual stream at each (layer, position): row l < n_layers is the
  input of block l, row n_layers the output of the last block.
- `head_patching`: each head's output z (all positions) at once.
- `patched_metric`: any set of those patches in one ordinary run with hooks (for a check,
  or for one cell).

The grids batch their runs: one forward pass from the patched layer on runs many patched
copies at once (`forward_from`'s idea: the blocks before the patch are the corrupted run's,
so they are not run again). Hooks go through `model.hooks`; the shared model never changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from model.hook_names import hook_names
from model.run import run_with_hooks
from model.runner import EncoderDecoderModel

from . import cost
from .induction import fresh_repeats
from .patch_sweep import counter, put_back, put_back_hook, sweep

MAX_PATCH_TOKENS = 128  # tokens per prompt
MAX_GRID_CELLS = 4096  # cells of one grid: (layers + 1) × positions, or layers × heads
MIN_GAP = 1e-6  # |clean − corrupted| metric below which there is nothing to recover
SMALL_GAP = 0.5  # logits: a clean-vs-corrupted gap below this makes the grids noisy
CLEAR_GAP = 2.0  # logits: a default corruption with at least this gap is taken at once


@dataclass
class Patching:
    """A clean and a corrupted run of the same length, their cached activations, and the
    metric. Made by `prepare`; read by the functions below."""

    loaded: object
    clean_ids: torch.Tensor  # [1, pos]
    corrupted_ids: torch.Tensor  # [1, pos]
    clean_tokens: list[str]
    corrupted_tokens: list[str]
    clean: dict[str, torch.Tensor]  # hook name -> [1, ...], on the model's device
    corrupted: dict[str, torch.Tensor]
    kind: str  # "logit_diff" or "cosine"
    position: int  # where the logit difference is read (decoders)
    answer: int | None  # token id whose logit counts +
    wrong: int | None  # token id whose logit counts −
    clean_value: float  # the raw metric of the clean run
    corrupted_value: float  # the raw metric of the corrupted run
    clean_final: torch.Tensor  # [1, pos, d_model], for the cosine metric

    @property
    def n_pos(self) -> int:
        return self.clean_ids.shape[1]

    def normalise(self, raw: torch.Tensor | float):
        """(raw − corrupted) / (clean − corrupted): 0 = corrupted, 1 = clean."""
        return (raw - self.corrupted_value) / (self.clean_value - self.corrupted_value)


def _cached_run(loaded, ids: torch.Tensor):
    """One forward pass of ids [1, pos]; every block's input and output and z kept."""
    names = hook_names(loaded.cfg)
    return run_with_hooks(loaded, ids, keep={
        *names.every_layer("resid", "pre"), *names.every_layer("resid", "post"),
        *names.every_layer("attn", "z")})


def _metric(p: Patching, final: torch.Tensor) -> torch.Tensor:
    """The raw metric of each batch item from final [batch, pos, d_model]: [batch], float64."""
    if p.kind == "cosine":
        clean = p.clean_final.expand_as(final)  # [batch, pos, d_model]
        return F.cosine_similarity(final.double(), clean.double(), dim=-1).mean(-1).cpu()
    w_u = p.loaded.model.unembed.weight.detach()  # [vocab, d_model], read only
    pair = final[:, p.position] @ w_u[[p.answer, p.wrong]].T  # [batch, 2], as the model's logits
    return (pair[:, 0].double() - pair[:, 1].double()).cpu()  # [batch]


def _check_prompts(loaded, clean_ids: torch.Tensor, corrupted_ids: torch.Tensor) -> None:
    if isinstance(loaded, EncoderDecoderModel):
        raise ValueError(f"Patching runs one stack of layers; {loaded.name} is an "
                         "encoder–decoder. Pick a decoder such as tiny-induction, or an encoder.")
    n_clean, n_corrupt = clean_ids.shape[1], corrupted_ids.shape[1]
    if n_clean != n_corrupt:
        raise ValueError(
            f"The clean prompt is {n_clean} tokens long and the corrupted prompt {n_corrupt}: "
            "they must have the same number of tokens, so that each position has a partner. "
            "Change a word for another word of the same length in tokens, or add or remove "
            "words in one of them.")
    limit = min(MAX_PATCH_TOKENS, loaded.cfg.n_ctx)
    if n_clean > limit:
        raise ValueError(f"The prompts are {n_clean} tokens long; patching takes at most "
                         f"{limit} (this model reads {loaded.cfg.n_ctx} tokens at a time). "
                         "Shorten both.")
    cells = max((loaded.cfg.n_layers + 1) * n_clean, loaded.cfg.n_layers * loaded.cfg.n_heads)
    if cells > MAX_GRID_CELLS:
        raise ValueError(f"That grid would have {cells:,} cells; patching computes at most "
                         f"{MAX_GRID_CELLS:,}. Use shorter prompts or a smaller model.")


def default_pair(clean_logits: torch.Tensor,
                  corrupted_logits: torch.Tensor) -> tuple[int, int]:
    """The clean prediction, and the corrupted prediction (or, when both predict the same
    token, the corrupted run's most likely other token). Logits: [vocab]."""
    answer = int(clean_logits.argmax())
    ranked = torch.sort(corrupted_logits, descending=True, stable=True).indices  # [vocab]
    wrong = int(ranked[0]) if int(ranked[0]) != answer else int(ranked[1])
    return answer, wrong


def _last_logits(loaded, texts: list[str], chunk: int = 16) -> torch.Tensor:
    """[len(texts), vocab] logits at the last token of each text (all the same number of
    tokens, within the context), run in batches of `chunk`; no hooks."""
    rows = [loaded.encode(t).input_ids[0] for t in texts]  # [pos] each
    if len({r.numel() for r in rows}) > 1 or rows[0].numel() > loaded.cfg.n_ctx:
        raise ValueError("the prompts must have the same number of tokens, within the context")
    last = []
    for start in range(0, len(rows), chunk):
        ids = torch.stack(rows[start:start + chunk]).to(loaded.device)  # [b, pos]
        out, _ = run_with_hooks(loaded, ids)
        last.append(out.logits[:, -1].double().cpu())  # [b, vocab]
    return torch.cat(last)


def _gap(clean: torch.Tensor, row: torch.Tensor) -> float:
    answer, wrong = default_pair(clean, row)
    return abs(float(clean[answer] - clean[wrong] - row[answer] + row[wrong]))


def logit_gaps(loaded, clean: str, corrupted: list[str], chunk: int = 16) -> list[float]:
    """For a decoder: |clean − corrupted| of the logit difference at the last token, with
    `default_pair`'s two tokens, for each corrupted prompt (the same number of tokens as the
    clean one, at most the context). Runs the prompts in batches of `chunk`; no hooks."""
    logits = _last_logits(loaded, [clean] + list(corrupted), chunk)  # [1 + n, vocab]
    return [_gap(logits[0], row) for row in logits[1:]]


def pick_flip(loaded, clean: str, candidates: list[str]) -> str:
    """Of the candidate corrupted prompts, the one that makes the model's top next token differ
    from the clean run's (so the logit difference compares the two prompts' own answers) with
    the largest logit gap; "" when no candidate changes the top token."""
    if not candidates:
        return ""
    logits = _last_logits(loaded, [clean] + list(candidates))  # [1 + n, vocab]
    top = int(logits[0].argmax())
    flips = [(_gap(logits[0], row), c) for c, row in zip(candidates, logits[1:])
             if int(row.argmax()) != top]
    return max(flips, key=lambda gc: gc[0])[1] if flips else ""


def pick_corruption(loaded, clean: str, candidates: list[str]) -> str:
    """Of the candidate corrupted prompts (most sensible first), the first whose logit gap
    (`logit_gaps`) is at least CLEAR_GAP, else the one with the largest gap ("" for none)."""
    if not candidates:
        return ""
    gaps = logit_gaps(loaded, clean, candidates)
    clear = [c for c, g in zip(candidates, gaps) if g >= CLEAR_GAP]
    return clear[0] if clear else candidates[int(np.argmax(gaps))]


def prepare_ids(loaded, clean_ids, corrupted_ids, answer: int | None = None,
                wrong: int | None = None, position: int = -1) -> Patching:
    """Run both prompts (token ids [pos]) and fix the metric. answer / wrong: the token ids
    of the logit difference (default `default_pair` at `position`); ignored for encoders."""
    dev = loaded.device
    clean_ids = torch.as_tensor(clean_ids, dtype=torch.long).reshape(1, -1).to(dev)  # [1, pos]
    corrupted_ids = torch.as_tensor(corrupted_ids, dtype=torch.long).reshape(1, -1).to(dev)
    _check_prompts(loaded, clean_ids, corrupted_ids)
    clean_out, clean = _cached_run(loaded, clean_ids)
    corrupted_out, corrupted = _cached_run(loaded, corrupted_ids)
    n_pos, cfg = clean_ids.shape[1], loaded.cfg
    if not -n_pos <= position < n_pos:
        raise ValueError(f"the position must be within the prompts' {n_pos} tokens")
    kind = "logit_diff" if clean_out.logits is not None else "cosine"
    if kind == "logit_diff":
        pos = position % n_pos
        default = default_pair(clean_out.logits[0, pos], corrupted_out.logits[0, pos])
        answer = default[0] if answer is None else int(answer)
        wrong = default[1] if wrong is None else int(wrong)
        if not (0 <= answer < cfg.d_vocab and 0 <= wrong < cfg.d_vocab) or answer == wrong:
            raise ValueError(f"the two tokens must be two different token ids in [0, "
                             f"{cfg.d_vocab})")
    p = Patching(
        loaded=loaded, clean_ids=clean_ids, corrupted_ids=corrupted_ids,
        clean_tokens=loaded.tokenizer.tokens(clean_ids[0].tolist()),
        corrupted_tokens=loaded.tokenizer.tokens(corrupted_ids[0].tolist()),
        clean=clean, corrupted=corrupted, kind=kind, position=position % n_pos,
        answer=answer if kind == "logit_diff" else None,
        wrong=wrong if kind == "logit_diff" else None,
        clean_value=0.0, corrupted_value=0.0, clean_final=clean_out.final)
    p.clean_value = float(_metric(p, clean_out.final)[0])
    p.corrupted_value = float(_metric(p, corrupted_out.final)[0])
    if abs(p.clean_value - p.corrupted_value) < MIN_GAP:
        raise ValueError("The clean and the corrupted prompt give the same metric, so there is "
                         "nothing to recover: make the corrupted prompt differ in a way that "
                         "changes the prediction, or choose two other tokens.")
    return p


def prepare(loaded, clean: str, corrupted: str, answer: int | None = None,
            wrong: int | None = None, position: int = -1) -> Patching:
    """`prepare_ids` on two texts, tokenized as every page does (special tokens included)."""
    a, b = loaded.encode(clean), loaded.encode(corrupted)
    n_a = int(a.attention_mask[0].sum()) + a.n_dropped[0]
    n_b = int(b.attention_mask[0].sum()) + b.n_dropped[0]
    _check_prompts(loaded, torch.zeros(1, n_a), torch.zeros(1, n_b))  # lengths before cuts
    return prepare_ids(loaded, a.input_ids[0, :n_a], b.input_ids[0, :n_b], answer, wrong,
                       position)


def induction_pair(length: int, n_symbols: int, seed: int = 0,
                   corrupt: str = "second") -> tuple[torch.Tensor, torch.Tensor]:
    """The induction preset: clean = x x (x: `length` distinct random token ids below
    n_symbols), corrupted = x y ("second": the copy replaced) or y x ("first": the earlier
    occurrence replaced), y fresh ids, avoiding x's where the alphabet allows. [2 * length]
    each. Corrupting the copy leaves the induction heads to recover the prediction;
    corrupting the first copy also needs the previous-token head."""
    if corrupt not in ("first", "second"):
        raise ValueError(f"corrupt must be 'first' or 'second', got {corrupt!r}")
    gen = torch.Generator().manual_seed(seed)
    clean = fresh_repeats(gen, 1, length, n_symbols)[0]  # [2L]
    x = clean[:length]  # [L]
    others = torch.tensor([i for i in range(n_symbols) if i not in set(x.tolist())])  # [k]
    if others.numel() >= length:
        y = others[torch.randperm(others.numel(), generator=gen)[:length]]  # [L]
    else:
        y = fresh_repeats(gen, 1, length, n_symbols)[0, :length]  # [L]
    corrupted = torch.cat([x, y]) if corrupt == "second" else torch.cat([y, x])  # [2L]
    return clean, corrupted


def _check_patches(cfg, n_pos: int, resid, heads) -> tuple[list, list]:
    resid, heads = [tuple(map(int, c)) for c in resid], [tuple(map(int, c)) for c in heads]
    for row, pos in resid:
        if not (0 <= row <= cfg.n_layers and 0 <= pos < n_pos):
            raise ValueError(f"residual cell ({row}, {pos}) is outside {cfg.n_layers + 1} rows "
                             f"× {n_pos} positions")
    for layer, head in heads:
        if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
            raise ValueError(f"head ({layer}, {head}) is outside {cfg.n_layers} layers × "
                             f"{cfg.n_heads} heads")
    return resid, heads


def patched_metric(p: Patching, resid: Iterable[tuple[int, int]] = (),
                   heads: Iterable[tuple[int, int]] = ()) -> float:
    """The normalised metric of one ordinary run of the corrupted prompt in which every
    residual cell (row, position) in `resid` and every head (layer, head) in `heads` (its z
    at all positions) takes its clean value."""
    cfg = p.loaded.cfg
    resid, heads = _check_patches(cfg, p.n_pos, resid, heads)
    fns: list[tuple[str, Callable]] = []
    for name, positions in _group(resid, lambda c: hook_names(cfg).resid_row(c[0])).items():
        idx = torch.tensor([c[1] for c in positions])  # [k]
        fns.append((name, _replacer(p.clean[name], idx, dim=1)))
    for layer, chosen in _group(heads, lambda c: c[0]).items():
        name = hook_names(cfg).attn(layer, "z")
        fns.append((name, _replacer(p.clean[name], torch.tensor([c[1] for c in chosen]), 1)))
    out, _ = run_with_hooks(p.loaded, p.corrupted_ids, hooks=fns)
    return float(p.normalise(_metric(p, out.final)[0]))


def _group(items, key) -> dict:
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def _replacer(clean: torch.Tensor, idx: torch.Tensor, dim: int) -> Callable:
    """A hook that copies clean[:, idx] (dim 1: positions of a residual, heads of z) in."""
    def replace(x: torch.Tensor, name: str) -> torch.Tensor:
        out = x.clone()
        out.index_copy_(dim, idx.to(x.device), clean.index_select(dim, idx.to(x.device)))
        return out
    return replace


def patch_chunk(cfg, n_pos: int, allowance: int | None = None, most: int = 256) -> int:
    """Patched copies per forward pass: as many as fit `allowance` bytes of working memory
    (default cost.DEFAULT_ALLOWANCE; analysis/cost.py), at least 1, at most `most`."""
    return cost.chunk("patching", cfg, n_pos, most, allowance)


def _tail(p: Patching, layer: int, x: torch.Tensor, fwd_hooks=()) -> torch.Tensor:
    """The blocks from `layer` on and the final norm, on x [batch, pos, d_model]; returns
    the raw metric of each item [batch]. (Like forward_from, without the full logits.)"""
    everything = torch.ones(1, p.n_pos, dtype=torch.long, device=x.device)  # [1, pos]
    out, _ = run_with_hooks(p.loaded, resid=x, start=layer, attention_mask=everything,
                            hooks=fwd_hooks, head=False)
    return _metric(p, out.final)  # final: [batch, pos, d_model]


def residual_patching(p: Patching, progress: Callable[[int, int], None] | None = None,
                      chunk: int | None = None, allowance: int | None = None) -> np.ndarray:
    """[n_layers + 1, pos]: the normalised metric with the residual stream at one (row,
    position) patched from the clean run. Row l < n_layers is block l's input; the last row
    is the last block's output. Each pass runs up to `chunk` positions of one row at once
    (default: as many as fit `allowance` bytes, `patch_chunk`)."""
    cfg, names = p.loaded.cfg, hook_names(p.loaded.cfg)
    n_rows, n_pos = cfg.n_layers + 1, p.n_pos

    def run(row: int, pos: torch.Tensor) -> torch.Tensor:  # one copy per position
        name = names.resid_row(row)
        x = put_back(p.corrupted[name].repeat(pos.numel(), 1, 1), p.clean[name], pos)
        return _tail(p, row, x)  # x: [b, pos, d_model]

    chunk = chunk or patch_chunk(cfg, n_pos, allowance, n_pos)
    grid = sweep(n_rows, n_pos, chunk, run, counter(progress, n_rows * n_pos))
    return p.normalise(grid).numpy()


def head_patching(p: Patching, progress: Callable[[int, int], None] | None = None,
                  chunk: int | None = None, allowance: int | None = None) -> np.ndarray:
    """[n_layers, n_heads]: the normalised metric with one head's output z (all positions)
    patched from the clean run. Each pass runs up to `chunk` heads of one layer at once
    (default: as many as fit `allowance` bytes), from that layer's corrupted input on."""
    cfg, names = p.loaded.cfg, hook_names(p.loaded.cfg)

    def run(layer: int, heads: torch.Tensor) -> torch.Tensor:  # one copy per head
        z = names.attn(layer, "z")  # clean: [1, head, pos, d_head]
        x = p.corrupted[names.resid(layer, "pre")].repeat(heads.numel(), 1, 1)  # [b, pos, d]
        return _tail(p, layer, x, [(z, put_back_hook(p.clean[z], heads))])

    chunk = chunk or patch_chunk(cfg, p.n_pos, allowance, cfg.n_heads)
    grid = sweep(cfg.n_layers, cfg.n_heads, chunk, run,
                 counter(progress, cfg.n_layers * cfg.n_heads))
    return p.normalise(grid).numpy()


def induction_preset(loaded, length: int, n_symbols: int, seed: int = 0, n_seqs: int = 1,
                     corrupt: str = "first",
                     progress: Callable[[int, int], None] | None = None) -> dict:
    """The induction preset on `n_seqs` repeated random sequences (seeds seed, seed + 1, ...):
    the residual grid and the tokens of the first one, and the head grid averaged over all
    of them, as the induction score averages over sequences (one sequence alone is noisy).
    "heads" [n_layers, n_heads] is the average; "single" the first sequence's own grid."""
    grids, first = [], None
    for i in range(n_seqs):
        p = prepare_ids(loaded, *induction_pair(length, n_symbols, seed + i, corrupt))
        grids.append(head_patching(p))
        if first is None:
            first = dict(resid=residual_patching(p), clean_tokens=p.clean_tokens,
                         corrupted_tokens=p.corrupted_tokens, position=p.position,
                         answer=p.answer, wrong=p.wrong)
        if progress is not None:
            progress(i + 1, n_seqs)
    return dict(first, heads=np.mean(grids, axis=0), single=grids[0], kind="logit_diff")
