"""Attention across heads and layers: the head average, attention rollout, and special tokens
left out.

Pure numeric helpers: numpy or torch arrays in, numpy arrays out. No Streamlit, no plotting.
Rows are queries, columns are keys, every attention row is a softmax over keys.
"""

from __future__ import annotations

import numpy as np
import torch



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
    """The mean over heads of one layer: [n_layers, head, q, k] -> [q, k]. Rows still sum to 1.
    Only that layer is converted, so a long text's other layers are not copied."""
    if not 0 <= layer < len(attentions):
        raise ValueError(f"layer must be in [0, {len(attentions)}), got {layer}")
    a = _numpy(attentions[layer], "attentions")  # [head, q_pos, k_pos]
    if a.ndim != 3 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attentions must be [n_layers, head, q_pos, k_pos] with q_pos == "
                         f"k_pos, got a layer of shape {tuple(a.shape)}")
    return a.mean(axis=0)  # [q_pos, k_pos]


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
