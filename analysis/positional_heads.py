"""Every head at once: how much of its pattern on this text comes from position alone.

The measure, for one head on one text (a number from 0 to 1):

    Take each query's scores over the keys it may see, each row's mean taken away (the
    softmax only reads how the scores differ between keys). Take the *position-only* score
    the same way. The measure is the share of the scores' spread that the position-only score
    explains: 1 − Σ (score − position-only)² / Σ score², over every query, floored at 0.

The position-only score is what the head scores with no word in it:
- models that add positions to the stream (learned or sinusoidal tables): the terms of the
  exact decomposition (analysis/score_parts.py) whose query side and key side are both
  position embeddings or fixed biases;
- T5: its relative-position bias (and the fixed biases' terms, if any);
- rotary positions: no part of the stream is position, so the text's average query and
  average key are put at every pair of places: what the rotation alone makes of a query and a
  key that do not change from word to word.

Every norm's scale is frozen at its value in the run, as in the decomposition, and the scores
are taken before Gemma 2's soft cap.
"""

from __future__ import annotations

import numpy as np
import torch

from model.hook_names import hook_names

from .score_parts import engine_mask, rotate_at
from .stream_parts import attention_inputs, group_of

BLOCKED = torch.finfo(torch.float32).min / 2  # a mask value below this hides the key


def _fixed_or_words(key: tuple) -> str:
    return "fixed" if group_of(key) in ("position", "bias") else "words"


def explained_share(scores: torch.Tensor, part: torch.Tensor, allowed: torch.Tensor) -> float:
    """1 − Σ(s − p)² / Σ s² over the allowed cells, each row centred over its allowed keys,
    floored at 0 (0 when the scores do not vary at all). scores, part, allowed: [q, k]."""
    w = allowed.double()  # [q, k]
    count = w.sum(-1, keepdim=True).clamp(min=1)  # [q, 1]
    s = (scores - (scores * w).sum(-1, keepdim=True) / count) * w  # [q, k]
    p = (part - (part * w).sum(-1, keepdim=True) / count) * w  # [q, k]
    spread = float(s.pow(2).sum())
    if spread == 0.0:
        return 0.0
    return max(0.0, 1.0 - float((s - p).pow(2).sum()) / spread)


def positional_map(loaded, trace) -> np.ndarray:
    """[layer, head]: the share of each head's score spread on this text that the
    position-only score explains (the module's docstring says how)."""
    model, cfg = loaded.model, loaded.cfg
    names = hook_names(cfg)
    n = trace.n_tokens
    out = np.zeros((cfg.n_layers, cfg.n_heads))
    for layer, parts in attention_inputs(model, trace.cache, torch.arange(n),
                                         merge=lambda k: (_fixed_or_words(k),)):
        attn = model.blocks[layer].attn
        mask = engine_mask(model, trace.attention_mask, layer)[0].double()  # [h or 1, q, k]
        mask = mask.expand(cfg.n_heads, n, n)  # [head, q_pos, k_pos]
        allowed = mask > BLOCKED  # [head, q_pos, k_pos]
        bias = torch.where(allowed, mask, torch.zeros((), dtype=torch.float64))  # T5's
        scores = _scores(trace, names, layer, attn, allowed, bias)  # [head, q_pos, k_pos]
        fixed = attn.scale * _position_only(attn, parts) + bias  # [head, q_pos, k_pos]
        for head in range(cfg.n_heads):
            out[layer, head] = explained_share(scores[head], fixed[head], allowed[head])
    return out


def _scores(trace, names, layer: int, attn, allowed, bias) -> torch.Tensor:
    """[head, q_pos, k_pos]: the scores the softmax read, up to a number per row (which the
    measure takes away): the log of the pattern the run kept, when no allowed weight
    underflowed to 0 and no cap squashed the scores; else scale · q·k + the mask's bias."""
    pattern = trace.cache[names.attn(layer, "pattern")][0].double()  # [head, q_pos, k_pos]
    if attn.softcap is None and bool(((pattern > 0) | ~allowed).all()):
        return torch.where(allowed, pattern.clamp_min(1e-300).log(), 0.0)
    qk = trace.cache[names.attn(layer, "qk")][0].double()  # [head, q_pos, k_pos]
    return attn.scale * qk + bias  # before any soft cap


def _all_heads(x: torch.Tensor, w: torch.Tensor, b) -> torch.Tensor:
    """x [pos, d_model] @ w [head, d_model, d_head] (+ b [head, d_head]) -> [head, pos, d_head]."""
    y = torch.einsum("pm,hmd->hpd", x, w.detach().double().cpu())
    return y if b is None else y + b.detach().double().cpu()[:, None]


def _position_only(attn, parts: dict) -> torch.Tensor:
    """[head, q_pos, k_pos]: q · k of the position-only query and key (before scaling), every
    head at once; each head's q/k norm (Qwen3, Gemma 3) frozen at its value in the run."""
    fixed = parts.get(("fixed",))
    words = parts.get(("words",))
    whole = fixed if words is None else words if fixed is None else fixed + words  # [pos, d]
    if attn.rotary is not None:  # the text's average query and key at every place
        q, k = _all_heads(whole, attn.W_Q, attn.b_Q), _all_heads(whole, attn.W_K, attn.b_K)
        every = torch.arange(whole.shape[0])
        q_avg = _frozen(attn.q_norm, q, q).mean(1, keepdim=True)  # [head, 1, d_head]
        k_avg = _frozen(attn.k_norm, k, k).mean(1, keepdim=True)  # [kv_head, 1, d_head]
        q_at = rotate_at(attn, q_avg.expand_as(q), every)  # [head, pos, d_head]
        k_at = rotate_at(attn, k_avg.expand_as(k), every)  # [kv_head, pos, d_head]
        return q_at @ attn.kv_per_head(k_at[None])[0].transpose(-1, -2)
    fixed = torch.zeros_like(whole) if fixed is None else fixed  # [pos, d_model]
    q_fixed = _all_heads(fixed, attn.W_Q, attn.b_Q)  # [head, pos, d_head]
    k_fixed = _all_heads(fixed, attn.W_K, attn.b_K)  # [kv_head, pos, d_head]
    if attn.q_norm is not None:  # frozen at the whole query and key
        q_fixed = _frozen(attn.q_norm, q_fixed, _all_heads(whole, attn.W_Q, attn.b_Q))
        k_fixed = _frozen(attn.k_norm, k_fixed, _all_heads(whole, attn.W_K, attn.b_K))
    return q_fixed @ attn.kv_per_head(k_fixed[None])[0].transpose(-1, -2)


def _frozen(norm, part: torch.Tensor, whole: torch.Tensor) -> torch.Tensor:
    """`part` [..., d_head] after a per-head RMSNorm frozen at `whole` (no norm: unchanged)."""
    if norm is None:
        return part
    inv = torch.rsqrt(whole.pow(2).mean(-1, keepdim=True) + norm.eps)
    return part * norm.gain().detach().double().cpu() * inv


def most_positional(share: np.ndarray, count: int = 3) -> list[tuple[int, int, float]]:
    """The `count` heads of a map ([layer, head]) with the largest share, largest first:
    (layer, head, share)."""
    order = np.argsort(-share, axis=None, kind="stable")[:count]
    return [(int(i // share.shape[1]), int(i % share.shape[1]), float(share.flat[i]))
            for i in order]


def telling_cell(trace, layer: int, head: int) -> tuple[int, int]:
    """(query, key): where this head looks most sharply on this text, the query a token that
    is not special (when there is one) and the key the one it gives the most weight."""
    pattern = trace.attention(layer, head).double()  # [q_pos, k_pos]
    peak, where = pattern.max(-1)  # [q_pos]
    ordinary = ~trace.special_mask[0].bool()  # [pos]
    if bool(ordinary.any()):
        peak = torch.where(ordinary, peak, -1.0)
    query = int(peak.argmax())
    return query, int(where[query])
