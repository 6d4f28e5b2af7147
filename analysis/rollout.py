"""Numbers derived from a trace: attention rollout, special-token filtering, the Q·K breakdown.

Pure numeric helpers: numpy or torch arrays in, numpy arrays out. No Streamlit, no plotting.
Rows are queries, columns are keys, every attention row is a softmax over keys.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .trace import Trace


def _numpy(x, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from exc


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    """Divide each row by its sum; a row that sums to 0 stays 0 (never NaN)."""
    sums = m.sum(axis=-1, keepdims=True)
    return np.divide(m, sums, out=np.zeros_like(m), where=sums > 0)


def _check_attentions(attentions, name: str = "attentions") -> np.ndarray:
    a = _numpy(attentions, name)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{name} must be [n_layers, head, q_pos, k_pos] with q_pos == k_pos, "
            f"got shape {tuple(a.shape)}"
        )
    return a


def head_average(attentions, layer: int) -> np.ndarray:
    """The mean over heads of one layer: [n_layers, head, q, k] -> [q, k]. Rows still sum to 1."""
    a = _check_attentions(attentions)
    if not 0 <= layer < a.shape[0]:
        raise ValueError(f"layer must be in [0, {a.shape[0]}), got {layer}")
    return a[layer].mean(axis=0)  # [q_pos, k_pos]


def attention_rollout(attentions, add_residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020), after every layer.

    For each layer l, average the heads: A_l = mean_h attention[l, h]  (rows = queries).
    Account for the residual connection: Ã_l = ½·A_l + ½·I, each row renormalised to sum 1
    (with add_residual=False, Ã_l = A_l renormalised).
    Multiply through the layers: R_0 = Ã_0 and R_l = Ã_l · R_{l-1}.
    Row i of R_l estimates how much each input token contributes to position i after layer l.

    attentions: [n_layers, head, q_pos, k_pos] (numpy or torch).
    Returns [n_layers, q_pos, k_pos] as float64 numpy; out[l] is R_l and its rows sum to 1.
    """
    a = _check_attentions(attentions)
    n_layers, _, n_pos, _ = a.shape
    mixed = a.mean(axis=1)  # [n_layers, q_pos, k_pos]
    if add_residual:
        mixed = 0.5 * mixed + 0.5 * np.eye(n_pos)[None]
    mixed = _normalise_rows(mixed)
    out = np.empty((n_layers, n_pos, n_pos))  # [n_layers, q_pos, k_pos]
    rollout = np.eye(n_pos)  # [q_pos, k_pos]
    for layer in range(n_layers):
        rollout = mixed[layer] @ rollout
        out[layer] = rollout
    return out


def drop_special(matrix, keep_mask) -> tuple[np.ndarray, list[int]]:
    """Keep only the positions where keep_mask is true, on both axes, and renormalise each row.

    matrix: [q_pos, k_pos] with q_pos == k_pos == len(keep_mask). Returns
    (matrix[keep][:, keep] with rows summing to 1, the kept positions). A row whose mass was all
    on dropped keys stays all zero rather than becoming NaN.
    """
    m = _numpy(matrix, "matrix")
    keep = np.asarray(keep_mask.detach().cpu() if isinstance(keep_mask, torch.Tensor)
                      else keep_mask).astype(bool)
    if keep.ndim != 1 or m.shape != (keep.size, keep.size):
        raise ValueError(
            f"matrix must be [pos, pos] and keep_mask [pos]; got matrix {tuple(m.shape)} and "
            f"keep_mask {tuple(keep.shape)}"
        )
    kept = np.flatnonzero(keep)
    if kept.size == 0:
        raise ValueError("every position is marked special: nothing is left to show")
    return _normalise_rows(m[np.ix_(kept, kept)]), kept.tolist()


def _hook(trace: Trace, layer: int, name: str) -> torch.Tensor:
    key = f"blocks.{layer}.attn.{name}"
    if key not in trace.cache:
        raise ValueError(f"the trace has no {key!r}; run the model without a `keep` filter")
    return trace.cache[key]


def qk_breakdown(trace: Trace, layer: int, head: int, query_pos: int, item: int = 0) -> dict:
    """Where one row of an attention pattern comes from, for one head and one query token.

    Returns a dict of numpy arrays and ints:
      q        [d_head]          the query vector (after rotation for rotary models)
      keys     [k_pos, d_head]   every key vector (after rotation), from the head's k/v head
      qk       [k_pos]           q·k for each key (the cache's hook_qk row)
      scaled   [k_pos]           q·k / sqrt(d_head); masked keys are -inf in this display copy
      softmax  [k_pos]           softmax of the scaled row over keys (the hook_pattern row)
      masked   [k_pos] bool      keys the query may not see (padding; later tokens if causal)
      layer, head, kv_head, query_pos, item, d_head, scale (= 1/sqrt(d_head)), rotary (bool)

    With grouped-query attention each k/v head serves n_heads // n_kv_heads consecutive query
    heads, so query head h reads k/v head h // (n_heads // n_kv_heads).
    """
    cfg = trace.cfg
    n_batch, n_pos = trace.input_ids.shape
    for value, upper, what in ((layer, cfg.n_layers, "layer"), (head, cfg.n_heads, "head"),
                               (query_pos, n_pos, "query_pos"), (item, n_batch, "item")):
        if not 0 <= int(value) < upper:
            raise ValueError(f"{what} must be in [0, {upper}), got {value}")
    rotary = f"blocks.{layer}.attn.hook_rot_q" in trace.cache
    kv_head = head // (cfg.n_heads // cfg.kv_heads)
    q = _hook(trace, layer, "hook_rot_q" if rotary else "hook_q")[item, head, query_pos]
    keys = _hook(trace, layer, "hook_rot_k" if rotary else "hook_k")[item, kv_head]
    q, keys = q.float(), keys.float()  # [d_head], [k_pos, d_head]
    qk = keys @ q  # [k_pos]
    scale = 1.0 / math.sqrt(cfg.d_head)

    allowed = trace.attention_mask[item].bool().clone()  # [k_pos]
    if cfg.causal:
        allowed &= torch.arange(n_pos) <= query_pos
    # The model adds float32's minimum rather than -inf (so a fully masked row stays finite);
    # the softmax below does the same, so it matches hook_pattern exactly.
    finite = torch.where(allowed, qk * scale, torch.tensor(torch.finfo(torch.float32).min))
    softmax = finite.softmax(dim=-1)  # [k_pos]
    shown = torch.where(allowed, qk * scale, torch.tensor(float("-inf")))  # [k_pos]
    return {
        "q": q.numpy().copy(), "keys": keys.numpy().copy(), "qk": qk.numpy(),
        "scaled": shown.numpy(), "softmax": softmax.numpy(), "masked": (~allowed).numpy(),
        "layer": int(layer), "head": int(head), "kv_head": int(kv_head),
        "query_pos": int(query_pos), "item": int(item), "d_head": cfg.d_head, "scale": scale,
        "rotary": rotary,
    }
