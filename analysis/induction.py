"""How much a head behaves like an induction head (or a previous-token head).

On a sequence x followed by the same x again (length L each), an induction head at a token of
the second copy looks at the token that came *after* that token's earlier occurrence, because
that is the token that will come next. The induction score of a head is the mean attention
from each token of the second copy (query position L + j) to that token (key position j + 1),
averaged over the sequences. A previous-token head looks one step back: the mean of
pattern[i, i - 1]. Both are fractions of attention, between 0 and 1.
"""

from __future__ import annotations

import torch

from model.hook_names import hook_names
from model.run import run_with_hooks


def fresh_repeats(gen: torch.Generator, batch: int, length: int, n_symbols: int) -> torch.Tensor:
    """[batch, 2 * length]: x followed by x again, x random of `length` tokens, all distinct
    within x when the alphabet allows (so "the earlier occurrence" is unambiguous)."""
    if length <= n_symbols:
        first = torch.rand(batch, n_symbols, generator=gen).argsort(dim=1)[:, :length]  # [batch, L]
    else:
        first = torch.randint(0, n_symbols, (batch, length), generator=gen)  # [batch, L]
    return torch.cat([first, first], dim=1)  # [batch, 2L]


def induction_score(patterns: torch.Tensor) -> torch.Tensor:
    """patterns: [batch, head, 2L, 2L] on repeated sequences x x -> [head] induction scores."""
    if patterns.dim() != 4 or patterns.shape[-1] != patterns.shape[-2] or patterns.shape[-1] % 2:
        raise ValueError("patterns must be [batch, head, 2L, 2L] for sequences x x, got "
                         f"{tuple(patterns.shape)}")
    length = patterns.shape[-1] // 2
    q = torch.arange(length, 2 * length)  # [L], the second copy
    k = q - length + 1  # [L], the token after the earlier occurrence
    return patterns[:, :, q, k].mean(dim=(0, 2))  # [head]


def previous_token_score(patterns: torch.Tensor) -> torch.Tensor:
    """patterns: [batch, head, pos, pos] -> [head], mean attention to the previous token."""
    n = patterns.shape[-1]
    q = torch.arange(1, n)  # [pos - 1]
    return patterns[:, :, q, q - 1].mean(dim=(0, 2))  # [head]


def pattern_cache(model, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Run a HookedTransformer on ids [batch, pos]; return every attn.hook_pattern."""
    return run_with_hooks(model, ids, keep=hook_names(model.cfg).every_layer("attn", "pattern"))[1]


def repeat_scores(model, n_seqs: int = 64, length: int = 20, seed: int = 1234,
                  n_symbols: int | None = None) -> dict[str, torch.Tensor]:
    """Score every head of a decoder on fresh random repeated sequences.

    Returns {"induction": [layer, head], "previous": [layer, head]}. The sequences come from
    their own generator (seed), never from the training stream. n_symbols: how many token ids
    to draw from (default: the whole vocabulary).
    """
    cfg = model.cfg
    if 2 * length > cfg.n_ctx:
        raise ValueError(f"2 * length = {2 * length} exceeds the context of {cfg.n_ctx}")
    gen = torch.Generator().manual_seed(seed)
    ids = fresh_repeats(gen, n_seqs, length, n_symbols or cfg.d_vocab)  # [batch, 2L]
    was_training = model.training
    model.eval()
    try:
        cache = pattern_cache(model, ids)
    finally:
        model.train(was_training)
    layers = [cache[name] for name in hook_names(cfg).every_layer("attn", "pattern")]
    return {
        "induction": torch.stack([induction_score(p) for p in layers]),  # [layer, head]
        "previous": torch.stack([previous_token_score(p) for p in layers]),  # [layer, head]
    }
