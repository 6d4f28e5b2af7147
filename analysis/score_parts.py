"""Why does this head look there? One attention score taken apart, exactly.

A pre-softmax score is scale · q · k (plus T5's relative-position bias). The query and the key
are linear in what the layer reads once its norm's scale is held at this run's value, and what
it reads is a sum of parts (analysis/stream_parts.py: the embeddings, every earlier head and
MLP, every bias). So q = Σ_a q_a and k = Σ_b k_b, and the score is Σ_a Σ_b scale · q_a · k_b:
a grid of query-part × key-part terms that adds up to the engine's score exactly (up to float
rounding). The query's and the key's own biases are one more part each.

- Rotary positions (Llama, GPT-NeoX, Qwen, Gemma, Phi-3): each part is rotated to its token's
  place (the rotation is linear too). The score also splits over the rotation's frequency
  bands (one pair of numbers each, plus the unrotated rest of a partial rotation), and the
  same query and key put other distances apart give a curve.
- Qwen3 and Gemma 3 normalise each head's q and k: that norm's scale is frozen the same way.
- T5: the relative-position bias, read from the engine's own mask, is one more term.
- Gemma 2: the grid adds up to the score before the soft cap; the cap is one more term
  (cap · tanh(s / cap) − s), computed by the engine's own function.
- Grouped-query attention: the key head this query head shares, and the heads sharing it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from model.hook_names import hook_names
from model.rotary import Rotary

from .stream_parts import GROUPS, attention_inputs, group_of

DISTANCES = (0, 1, 2, 3, 5, 10, 20, 50, 100)  # the rotary curve's distances, in tokens


@dataclass
class CellParts:
    """One cell's score (query position `query`, key position `key`) in one head, in parts.

    grid[a, b] = scale · q_a · k_b; `extra` holds the terms outside the grid (T5's
    "relative position", Gemma 2's "soft cap"); `total()` equals `score`, the engine's own
    pre-softmax score in this run, up to float rounding.
    """

    layer: int
    head: int
    query: int
    key: int
    tokens: list[str]
    q_keys: list[tuple]  # the query side's parts (stream_parts keys, and ("query bias",))
    k_keys: list[tuple]
    grid: np.ndarray  # [q_part, k_part]
    extra: dict[str, float]
    score: float  # the engine's score at this cell (hook_scores), read from the run
    scale: float  # what q · k is multiplied by (1/√d_head unless the model says otherwise)
    kv_head: int  # the key head this query head reads (itself without grouped-query attention)
    shared_with: list[int]  # the query heads reading that key head (this one included)
    bands: np.ndarray | None = None  # rotary: [band] the scaled score in each frequency band
    band_periods: np.ndarray | None = None  # rotary: [band] each band's period in tokens
    unrotated: float = 0.0  # partial rotary: the scaled score of the dimensions not rotated
    distances: np.ndarray | None = None  # rotary: [n] distances (query after key, tokens)
    curve: np.ndarray | None = None  # rotary: [n] the score were the two tokens that far apart
    notes: list[str] = field(default_factory=list)
    stack: str = "encoder"  # an encoder–decoder's "decoder" (self-attention) or "cross"
    key_tokens: list[str] | None = None  # the keys' tokens where they are not `tokens` (cross)

    def total(self) -> float:
        return float(self.grid.sum() + sum(self.extra.values()))

    def grouped(self) -> tuple[list[str], list[str], np.ndarray]:
        """(query groups, key groups, [q_group, k_group] sums): the grid added up by group
        (stream_parts.GROUPS), groups the cell does not have left out."""
        qg = [g for g in GROUPS if any(group_of(k) == g for k in self.q_keys)]
        kg = [g for g in GROUPS if any(group_of(k) == g for k in self.k_keys)]
        out = np.zeros((len(qg), len(kg)))
        for a, qk in enumerate(self.q_keys):
            for b, kk in enumerate(self.k_keys):
                out[qg.index(group_of(qk)), kg.index(group_of(kk))] += self.grid[a, b]
        return qg, kg, out


def needed(cfg, more=()):
    """keep() for a run that decompose_cell and positional_map can read: the embeddings,
    every block's input, attention pattern, v, q·k and scores; and the names in `more` (an
    encoder–decoder's decoder: seq2seq_score_parts.needed_decoder)."""
    names = hook_names(cfg)
    wanted = {names.embed(part, required=False) for part in ("tok", "type", "pos")}
    for layer in range(cfg.n_layers):
        wanted |= {names.resid(layer, "pre")} | {names.attn(layer, what) for what in
                                                ("pattern", "v", "qk", "scores")}
    wanted.discard(None)
    wanted |= set(more)
    return lambda name: name in wanted


def part_label(key: tuple, side: str = "") -> str:
    """A part's plain name: "token embedding", "layer 2 head 5", "query bias", ...; with a
    `side` ("encoder", "decoder": an encoder–decoder's cross-attention or decoder) that word
    first, and a decoder's heads named self- or cross-attention."""
    if side:
        label = part_label(key)
        if side == "decoder" and key[0] == "head":
            label = f"layer {key[1]} self-attention head {key[2]}"
        return label if key[0] in ("query bias", "key bias") else f"{side} {label}"
    kind = key[0]
    plain = {"token": "token embedding", "position": "position embedding",
             "type": "token type embedding", "project bias": "embedding projection bias",
             "query bias": "query bias", "key bias": "key bias"}
    if kind in plain:
        return plain[kind]
    if kind in ("head", "cross head"):
        what = "cross-attention head" if kind == "cross head" else "head"
        return f"layer {key[1]} {what} {key[2]}"
    if kind == "norm bias":
        return f"norm bias ({key[1]})"
    return f"layer {key[1]} " + {"attn bias": "attention bias", "mlp": "MLP",
                                 "cross bias": "cross-attention bias",
                                 "mlp bias": "MLP bias"}[kind]


def engine_mask(model, attention_mask: torch.Tensor, layer: int) -> torch.Tensor:
    """The additive mask the engine gave layer `layer`'s attention in this run
    ([batch or 1, 1 or head, q_pos, k_pos]): padding, causality, a sliding window, T5's
    relative-position bias."""
    dtype = model.embed.W_E.weight.dtype
    with torch.no_grad():
        if hasattr(model, "layer_masks"):
            return model.layer_masks(attention_mask, dtype)[layer].cpu()
        return model.encoder_mask(attention_mask, dtype).cpu()  # an encoder–decoder's encoder


def project(parts: dict, w: torch.Tensor, b: torch.Tensor | None, bias_key: tuple):
    """(keys, [part, pos, d_head]): every part times w [d_model, d_head], and the bias
    (`bias_key`) as one more part where there is one."""
    keys = list(parts)
    out = torch.stack(list(parts.values())) @ w  # [part, pos, d_head]
    if b is None:
        return keys, out
    return keys + [bias_key], torch.cat([out, b.expand_as(out[:1])])


def head_sides(attn, parts: dict, head: int):
    """(q_keys, q parts [a, pos, d_head], k_keys, k parts [b, pos, d_head]) of one head at
    every position of `parts`, after the per-head norm (frozen), before any rotation."""
    kv = head // (attn.cfg.n_heads // attn.cfg.n_kv_heads)
    w = lambda t, i: t.detach().double().cpu()[i]  # noqa: E731
    q_keys, q = project(parts, w(attn.W_Q, head), None if attn.b_Q is None else
                        w(attn.b_Q, head), ("query bias",))  # [a, pos, d_head]
    k_keys, k = project(parts, w(attn.W_K, kv), None if attn.b_K is None else
                        w(attn.b_K, kv), ("key bias",))  # [b, pos, d_head]
    if attn.q_norm is not None:
        q, k = _frozen_head_norm(attn.q_norm, q), _frozen_head_norm(attn.k_norm, k)
    return q_keys, q, k_keys, k


def _frozen_head_norm(norm, x: torch.Tensor) -> torch.Tensor:
    """x [part, pos, d_head] after a per-head RMSNorm, its scale frozen at the parts' sum."""
    whole = x.sum(0)  # [pos, d_head]
    inv = torch.rsqrt(whole.pow(2).mean(-1, keepdim=True) + norm.eps)  # [pos, 1]
    return x * norm.gain().detach().double().cpu() * inv


def rotate_at(attn, x: torch.Tensor, positions) -> torch.Tensor:
    """x [..., pos, d_head] rotated to `positions` ([pos] ints) by the layer's own rotation."""
    positions = torch.as_tensor(positions, dtype=torch.long)
    cos, sin = attn.rotary.cos_sin(int(positions.max()) + 1, torch.device("cpu"))
    return Rotary.rotate(x, cos[positions].double(), sin[positions].double())


def _check_cell(trace, cfg, layer, head, query, key) -> None:
    n = trace.n_tokens
    for what, value, top in (("layer", layer, cfg.n_layers), ("head", head, cfg.n_heads),
                             ("query position", query, n), ("key position", key, n)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value < top:
            raise ValueError(f"the {what} must be a whole number from 0 to {top - 1}, "
                             f"got {value!r}")


def decompose_cell(loaded, trace, layer: int, head: int, query: int, key: int,
                   distances=DISTANCES) -> CellParts:
    """The score of (query, key) in `head` of `layer` in this run, taken apart.

    `trace` is one text's run of `loaded` (every hook point kept, as pages run it)."""
    model, cfg = loaded.model, loaded.cfg
    _check_cell(trace, cfg, layer, head, query, key)
    attn, names = model.blocks[layer].attn, hook_names(cfg)
    n = trace.n_tokens
    masks = engine_mask(model, trace.attention_mask, layer)[0]  # [1 or head, 1 or q_pos, k_pos]
    mask = float(masks.expand(cfg.n_heads, n, n)[head, query, key])
    if mask <= torch.finfo(torch.float32).min / 2:
        raise ValueError(_hidden_why(cfg, query, key))
    *_, (_, parts) = attention_inputs(model, trace.cache, [query, key], stop=layer + 1)
    q_keys, q, k_keys, k = head_sides(attn, parts, head)
    q, k = q[:, 0], k[:, 1]  # [a, d_head], [b, d_head]
    q_pre, k_pre = q.sum(0), k.sum(0)  # [d_head], before any rotation
    if attn.rotary is not None:
        q = rotate_at(attn, q[:, None], [query])[:, 0]  # each part turned to its place
        k = rotate_at(attn, k[:, None], [key])[:, 0]
    grid = attn.scale * (q @ k.T)  # [a, b]
    raw = (q.sum(0) @ k.sum(0)).reshape(1, 1, 1, 1)  # q · k, before scaling
    engine = float(attn.scores_from(raw, torch.tensor(mask, dtype=torch.float64)))
    extra = {}
    if getattr(model, "rel_bias", None) is not None:
        extra["relative position"] = mask
    if attn.softcap is not None:
        extra["soft cap"] = engine - (float(grid.sum()) + mask)
    groups = cfg.n_heads // cfg.n_kv_heads
    kv = head // groups
    cell = CellParts(
        layer=layer, head=head, query=query, key=key, tokens=list(trace.tokens),
        q_keys=q_keys, k_keys=k_keys, grid=grid.numpy(), extra=extra,
        score=float(trace.cache[names.attn(layer, "scores")][0, head, query, key]),
        scale=float(attn.scale), kv_head=kv, shared_with=list(range(kv * groups,
                                                                   (kv + 1) * groups)))
    if attn.rotary is not None:
        _rotary_views(cell, attn, q.sum(0), k.sum(0), q_pre, k_pre, distances)
    return cell


def _hidden_why(cfg, query: int, key: int) -> str:
    if cfg.causal and key > query:
        return (f"token {query} cannot look at token {key}: this model reads left to right, "
                "so a token only sees itself and the tokens before it")
    window = cfg.sliding_window
    if window is not None and cfg.causal and query - key >= window:
        return (f"token {query} cannot look at token {key} in this layer: it only looks "
                f"{window} tokens back")
    return f"token {query} does not look at token {key} in this layer (the key is padding)"


def _rotary_views(cell: CellParts, attn, q_rot, k_rot, q_pre, k_pre, distances) -> None:
    """The score by frequency band, and the curve over distances (both scaled, as the grid)."""
    rot = attn.rotary.rotary_dim
    half = rot // 2
    prod = attn.scale * q_rot * k_rot  # [d_head]
    cell.bands = (prod[:half] + prod[half:rot]).numpy()  # [band]
    cell.unrotated = float(prod[rot:].sum())
    cell.band_periods = (2 * math.pi / attn.rotary.inv_freq.double().cpu()).numpy()
    d = torch.as_tensor(sorted({*distances, cell.query - cell.key}), dtype=torch.long)
    d = d[d >= 0]
    q_at = rotate_at(attn, q_pre.expand(len(d), -1), d)  # [n, d_head], the query d tokens on
    k_at = rotate_at(attn, k_pre[None], [0])  # [1, d_head], the key at the start
    raw = (q_at * k_at).sum(-1).reshape(1, 1, 1, -1)  # [1, 1, 1, n]
    cell.distances = d.numpy()
    cell.curve = attn.scores_from(raw, torch.zeros((), dtype=torch.float64)).reshape(-1).numpy()


# What a learner reads first: the score's terms in a few kinds, each kind's sum signed.
KINDS = ("place", "words", "word and place", "earlier layers", "fixed biases", "soft cap")


def _kind(q_group: str, k_group: str) -> str:
    sides = {q_group, k_group}
    if sides & {"attention", "cross", "mlp"}:
        return "earlier layers"
    if "bias" in sides:
        return "fixed biases"
    if sides == {"position"}:
        return "place"
    return "word and place" if "position" in sides else "words"


def score_kinds(cell: CellParts) -> dict[str, float]:
    """The score's terms added up by kind (KINDS, those the cell has): "place" (position ×
    position, and T5's relative-position bias), "words" (token and token type on both
    sides), "word and place" (one side each), "earlier layers" (an earlier head or MLP on
    either side), "fixed biases" (a bias with an embedding or another bias), "soft cap"."""
    out: dict[str, float] = {}
    for a, qk in enumerate(cell.q_keys):
        for b, kk in enumerate(cell.k_keys):
            kind = _kind(group_of(qk), group_of(kk))
            out[kind] = out.get(kind, 0.0) + float(cell.grid[a, b])
    if "relative position" in cell.extra:
        out["place"] = out.get("place", 0.0) + cell.extra["relative position"]
    if "soft cap" in cell.extra:
        out["soft cap"] = cell.extra["soft cap"]
    return {k: out[k] for k in KINDS if k in out}


def kind_shares(kinds: dict[str, float]) -> dict[str, float]:
    """Each kind's share of the score's size: |sum of the kind| / Σ |sums| (the kinds can
    pull in opposite directions, so shares of the signed score would not add up to 100%)."""
    size = sum(abs(v) for v in kinds.values())
    return {k: (abs(v) / size if size else 0.0) for k, v in kinds.items()}
