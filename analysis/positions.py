"""How a transformer knows order: position tables, their similarities, and rotary's relative
distances. Pure torch: tensors in, tensors out; nothing here changes a model.

Three kinds of position, as `TransformerConfig.positions` names them:
- "sinusoidal": a fixed table PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] =
  cos(same), added to the token embeddings (the original transformer); no parameters.
- "learned": a trained table W_pos [n_ctx, d_model] added to the token embeddings (BERT,
  GPT-2); n_ctx x d_model parameters, and no position beyond n_ctx.
- "rotary": no table is added; each pair of q and k components is rotated by an angle
  pos * theta_i (Llama), so q·k depends on the distance between the positions only.
- "relative": no table and no rotation (T5): every score gets a learned number added that
  depends only on the head and on the distance from query to key, in buckets that are one
  position wide near the query and logarithmically wider further away (relative_bias).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from model.layers import Rotary, sinusoidal_table
from model.seq2seq_stacks import relative_bucket
from model.transformer import HookedTransformer

__all__ = ["PositionTable", "model_positions", "position_similarity", "rotary_inv_freq",
           "rotary_qk_by_distance", "rotary_table", "similarity_by_distance", "falls_with_distance",
           "relative_bias", "sinusoidal_frequencies", "sinusoidal_table", "wavelengths"]

SIMILARITIES = ("dot", "cosine")


@dataclass(frozen=True)
class PositionTable:
    """One vector per position, as a model uses it.

    table: [pos, width]; for "learned" and "sinusoidal" the rows the model adds to position
    0, 1, ...; for "rotary" the rotation it applies, [cos(pos * theta_i), sin(pos * theta_i)].
    """

    kind: str  # "learned", "sinusoidal" or "rotary"
    table: torch.Tensor  # [pos, width]
    source: str  # where the numbers come from, e.g. "embed.W_pos.weight"
    n_parameters: int  # trained numbers behind the table (0 for fixed ones)


def sinusoidal_frequencies(d_model: int) -> torch.Tensor:
    """omega_i = 1 / 10000^(2i / d_model) for i = 0 .. ceil(d_model / 2) - 1, in radians per
    position; dimensions 2i and 2i+1 share omega_i. Falls from 1 to ~1/10000."""
    if d_model < 1:
        raise ValueError(f"d_model must be positive, got {d_model}")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [ceil(d_model / 2)]
    return 1.0 / torch.pow(10000.0, two_i / d_model)


def rotary_inv_freq(model: HookedTransformer) -> torch.Tensor:
    """The rotation frequencies theta_i the model really uses, [d_head / 2], radians per
    position (layer 0's buffer; every layer holds the same one)."""
    rotary = model.blocks[0].attn.rotary
    if rotary is None:
        raise ValueError(f"this model's positions are {model.cfg.positions!r}, not rotary")
    return rotary.inv_freq.detach().cpu()


def rotary_table(model: HookedTransformer, n_pos: int) -> torch.Tensor:
    """[pos, d_head]: the model's own cos_sin for n_pos positions, one half of each:
    columns [cos(pos * theta_i) for i] + [sin(pos * theta_i) for i]."""
    rotary = model.blocks[0].attn.rotary
    if rotary is None:
        raise ValueError(f"this model's positions are {model.cfg.positions!r}, not rotary")
    cos, sin = rotary.cos_sin(n_pos, torch.device("cpu"))  # [pos, d_head] each
    half = cos.shape[-1] // 2
    return torch.cat([cos[:, :half], sin[:, :half]], dim=-1)  # [pos, d_head]


def model_positions(model: HookedTransformer, n_pos: int | None = None) -> PositionTable:
    """The loaded model's own position vectors for positions 0 .. n_pos-1 (default: all n_ctx).

    Learned tables are the model's weight itself (a view, not a copy): for RoBERTa, whose
    positions are numbered from padding_idx + 1, the rows the model uses for position 0, 1, ...
    """
    cfg = model.cfg
    n = cfg.n_ctx if n_pos is None else int(n_pos)
    if not 1 <= n <= cfg.n_ctx and cfg.positions != "rotary":
        raise ValueError(f"n_pos must be in [1, {cfg.n_ctx}] for this model, got {n}")
    if cfg.positions == "learned":
        weight = model.embed.W_pos.weight.detach()  # [n_ctx + offset, d_model]
        start = cfg.position_offset
        return PositionTable("learned", weight[start:start + n], "embed.W_pos.weight"
                             + (f"[{start}:]" if start else ""), weight.numel())
    if cfg.positions == "sinusoidal":
        return PositionTable("sinusoidal", model.embed.pe[:n].detach().cpu(), "embed.pe", 0)
    if n < 1:
        raise ValueError(f"n_pos must be positive, got {n}")
    return PositionTable("rotary", rotary_table(model, n), "blocks.0.attn.rotary.inv_freq", 0)


def position_similarity(table: torch.Tensor, kind: str = "cosine") -> torch.Tensor:
    """[pos, pos]: the dot product or the cosine of every pair of position vectors."""
    if kind not in SIMILARITIES:
        raise ValueError(f"kind must be one of {SIMILARITIES}, got {kind!r}")
    if table.dim() != 2:
        raise ValueError(f"table must be [pos, width], got shape {tuple(table.shape)}")
    x = table.double()  # [pos, width]
    if kind == "cosine":
        x = F.normalize(x, dim=-1)
    return x @ x.T  # [pos, pos]


def similarity_by_distance(sim: torch.Tensor) -> torch.Tensor:
    """[pos]: the mean of sim[m, n] over all pairs with |m - n| = distance, distance 0, 1, ..."""
    if sim.dim() != 2 or sim.shape[0] != sim.shape[1]:
        raise ValueError(f"sim must be square [pos, pos], got shape {tuple(sim.shape)}")
    n = sim.shape[0]
    return torch.stack([torch.diagonal(sim, offset=d).mean() for d in range(n)])  # [pos]


def falls_with_distance(decay: torch.Tensor, near: int = 3, margin: float = 0.2) -> bool:
    """Whether near positions are more alike than far ones: the mean of `decay` (from
    similarity_by_distance) over distances 1..near exceeds its mean over the farther half of
    the distances by more than `margin` of the self-similarity decay[0]. False for a table
    whose every position points its own way (a model trained on text where order carries
    no distance, such as random repeated symbols)."""
    if decay.dim() != 1 or decay.shape[0] < 2 * near + 2:
        return True  # too few distances to tell: say nothing new
    close = decay[1:near + 1].mean()
    far = decay[decay.shape[0] // 2:].mean()
    return bool(close - far > margin * decay[0].abs())


def rotary_qk_by_distance(q: torch.Tensor, k: torch.Tensor, model: HookedTransformer,
                          n_dist: int, layer: int = 0) -> torch.Tensor:
    """[n_dist]: q·k after the model's rotation, with the query at position d and the key at 0,
    for d = 0 .. n_dist-1. RoPE makes this the score at any query/key positions m, n with
    m - n = d: rot(q, m)·rot(k, n) = rot(q, m - n)·k.

    q, k: [d_head], unrotated (hook_q / hook_k of one token); layer: whose rotation (Gemma 3's
    sliding and full layers rotate at different rates).
    """
    rotary = model.blocks[layer].attn.rotary
    if rotary is None:
        raise ValueError(f"this model's positions are {model.cfg.positions!r}, not rotary")
    if q.shape != k.shape or q.dim() != 1:
        raise ValueError(f"q and k must both be [d_head], got {tuple(q.shape)}, {tuple(k.shape)}")
    if n_dist < 1:
        raise ValueError(f"n_dist must be positive, got {n_dist}")
    cos, sin = rotary.cos_sin(n_dist, torch.device("cpu"))  # [n_dist, d_head]
    q_rot = Rotary.rotate(q.float().cpu()[None, :].expand(n_dist, -1), cos, sin)  # [n_dist, d_head]
    return q_rot @ k.float().cpu()  # [n_dist]


def wavelengths(freq: torch.Tensor) -> torch.Tensor:
    """Positions per full turn, 2 pi / omega, for frequencies in radians per position."""
    return 2 * math.pi / freq


def relative_bias(model, decoder: bool = False,
                  max_distance: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """T5's relative position bias as a function of distance: (distances [n], bias [head, n]).

    distance = key position - query position: negative for keys before the query. The encoder
    looks both ways (distances -D .. D); the decoder only back (-D .. 0). D defaults to the
    model's relative_attention_max_distance, past which every distance shares the last bucket
    (the curve is flat). bias[h, i] is what head h adds to every score at distances[i], in
    every layer of that stack: `model` is a Seq2SeqTransformer (model/seq2seq_stacks.py).
    """
    module = getattr(model.decoder if decoder else model, "rel_bias", None)
    if module is None:
        raise ValueError("this model has no relative position bias (only T5 models have one)")
    span = module.max_distance if max_distance is None else int(max_distance)
    if span < 1:
        raise ValueError(f"max_distance must be positive, got {span}")
    distances = torch.arange(-span, 1 if decoder else span + 1)  # [n]
    buckets = relative_bucket(distances, module.bidirectional, module.n_buckets,
                              module.max_distance)  # [n]
    with torch.no_grad():
        bias = module.W_bias.weight.detach().float().cpu()[buckets.cpu()]  # [n, head]
    return distances, bias.T.contiguous()  # [n], [head, n]
