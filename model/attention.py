"""Attention: `Attention.forward` is where every model here computes q, k, v, the scores, the
pattern and each head's output. Also the rules it follows, which analyses ask for rather than
derive again: a layer's scale (`attention_scale`), its sliding window (`layer_window`), the
scores from q·k (`scores_from`: scaled, soft-capped, masked) and which keys a query may see
(`allowed_keys`, `attention_mask_bias`, `layer_mask`).

Shapes as in layers.py: rows are queries, columns are keys, softmax over keys.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig
from .hooks import HookPoint
from .layers import make_norm, normal_in_order
from .rotary import Rotary, layer_rotary


# ------------------------------------------------------------------------------ the rules
def attention_scale(cfg) -> float:
    """What q·k is multiplied by: 1/√d_head unless the model has its own (Gemma 2 and 3:
    1/√query_pre_attn_scalar; GPT-Neo and T5: 1)."""
    return 1.0 / math.sqrt(cfg.d_head) if cfg.attn_scale is None else cfg.attn_scale


def layer_window(cfg, layer: int) -> int | None:
    """The sliding window of `layer` (None: it sees every key its mask allows)."""
    return cfg.sliding_window if cfg.layer_type(layer) == "sliding" else None


def scores_from(qk: torch.Tensor, mask: torch.Tensor, scale: float,
                softcap: float | None) -> torch.Tensor:
    """q·k [batch, head, q_pos, k_pos] -> the scores the softmax reads: scaled, (Gemma 2:
    soft-capped, cap·tanh(s / cap),) plus the additive mask."""
    if softcap is None:
        return torch.add(mask, qk, alpha=scale)  # [batch, head, q_pos, k_pos]
    capped = torch.tanh(qk * scale / softcap) * softcap  # cap·tanh(s / cap)
    return capped + mask  # [batch, head, q_pos, k_pos]


def allowed_keys(n_pos: int, causal: bool, window: int | None = None,
                 device: torch.device | None = None) -> torch.Tensor:
    """Which keys each query may see before padding, [q_pos, k_pos] (bool): every key (an
    encoder); itself and earlier keys (causal); with a sliding `window`, only keys fewer than
    `window` positions back (causal: Mistral, Gemma 2 and 3, GPT-Neo) or fewer than `window`
    positions away on either side (a bidirectional window: EmbeddingGemma)."""
    pos = torch.arange(n_pos, device=device)
    back = pos[:, None] - pos[None, :]  # query position minus key position
    allowed = back >= 0 if causal else torch.ones(n_pos, n_pos, dtype=torch.bool, device=device)
    if window is not None:
        allowed = allowed & ((back < window) if causal else (back.abs() < window))
    return allowed


def attention_mask_bias(
    attention_mask: torch.Tensor, causal: bool, dtype: torch.dtype, window: int | None = None
) -> torch.Tensor:
    """Additive mask [batch, 1, q_pos, k_pos]: 0 where a query may look, the dtype's minimum
    where it may not (padding keys, and the keys `allowed_keys` leaves out). An encoder with
    no window gets [batch, 1, 1, k_pos], broadcast over queries.

    The minimum rather than -inf keeps a row with every key masked finite, as HF does;
    exp(min - max) is exactly 0 in float32, so masked cells get exactly zero attention.
    """
    n_pos = attention_mask.shape[1]
    allowed = attention_mask.bool()[:, None, None, :]  # [batch, 1, 1, k_pos]
    if causal or window is not None:
        allowed = allowed & allowed_keys(n_pos, causal, window, attention_mask.device)
    zero = torch.zeros((), dtype=dtype, device=attention_mask.device)
    blocked = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=attention_mask.device)
    return torch.where(allowed, zero, blocked)


def layer_mask(cfg, layer: int, attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive mask block `layer` of a single stack gets (attention_mask_bias with the
    model's causality and that layer's window), from attention_mask [batch, pos]."""
    return attention_mask_bias(attention_mask, cfg.causal, dtype, layer_window(cfg, layer))


# ------------------------------------------------------------------------- the module
# The per-head weights are stored as nn.Linear stores the joined heads' weight ([out, in],
# row-major) and seen per head through a view. So the forward pass multiplies by the stored
# matrix itself, as HF's nn.Linear does, instead of copying every weight into that layout on
# every call (BENCHMARKS.md, "Forward pass"). A weight in any other layout (one a user
# assigned, say) gives the same numbers through a copy.
def linear_layout_q(n_heads: int, d_model: int, d_head: int) -> torch.Tensor:
    """[head, d_model, d_head], a view of a [head*d_head, d_model] matrix (q, k, v)."""
    return torch.empty(n_heads * d_head, d_model).view(n_heads, d_head, d_model).transpose(1, 2)


def linear_layout_o(n_heads: int, d_head: int, d_model: int) -> torch.Tensor:
    """[head, d_head, d_model], a view of a [d_model, head*d_head] matrix (the output)."""
    return torch.empty(d_model, n_heads * d_head).T.view(n_heads, d_head, d_model)


class Attention(nn.Module):
    """Multi-head self-attention with per-head weights, so every head can be read on its own.

    W_Q: [head, d_model, d_head]; W_K, W_V: [kv_head, d_model, d_head]; W_O: [head, d_head, d_model].
    With fewer k/v heads than q heads (grouped-query attention) each k/v head serves
    n_heads / n_kv_heads consecutive query heads.
    """

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        h, kv, d, dh = cfg.n_heads, cfg.n_kv_heads, cfg.d_model, cfg.d_head
        self.W_Q = nn.Parameter(linear_layout_q(h, d, dh))  # [head, d_model, d_head]
        self.W_K = nn.Parameter(linear_layout_q(kv, d, dh))  # [kv_head, d_model, d_head]
        self.W_V = nn.Parameter(linear_layout_q(kv, d, dh))  # [kv_head, d_model, d_head]
        self.W_O = nn.Parameter(linear_layout_o(h, dh, d))  # [head, d_head, d_model]
        for w in (self.W_Q, self.W_K, self.W_V, self.W_O):
            normal_in_order(w, std=0.02)
        if cfg.attn_bias:
            self.b_Q = nn.Parameter(torch.zeros(h, dh))
            self.b_K = nn.Parameter(torch.zeros(kv, dh))
            self.b_V = nn.Parameter(torch.zeros(kv, dh))
        else:
            self.b_Q = self.b_K = self.b_V = None
        self.b_O = nn.Parameter(torch.zeros(d)) if cfg.has_out_bias else None
        self.scale = attention_scale(cfg)
        self.softcap = cfg.attn_softcap  # Gemma 2: scores squashed into (-cap, cap)
        self.window = layer_window(cfg, layer)
        self.rotary = layer_rotary(cfg, layer)
        self.hook_q = HookPoint()  # [batch, head, pos, d_head]
        self.hook_k = HookPoint()  # [batch, kv_head, pos, d_head]
        self.hook_v = HookPoint()  # [batch, kv_head, pos, d_head]
        # Qwen3, Gemma 3: each head's q and k normalised over d_head before the rotation
        self.q_norm = make_norm(cfg, dh) if cfg.qk_norm else None
        self.k_norm = make_norm(cfg, dh) if cfg.qk_norm else None
        if self.rotary is not None:
            self.hook_rot_q = HookPoint()  # [batch, head, pos, d_head], after rotation
            self.hook_rot_k = HookPoint()  # [batch, kv_head, pos, d_head], after rotation
        self.hook_qk = HookPoint()  # [batch, head, q_pos, k_pos], q·k before scaling
        self.hook_scores = HookPoint()  # [batch, head, q_pos, k_pos], scaled and masked
        self.hook_pattern = HookPoint()  # [batch, head, q_pos, k_pos], softmax over k_pos
        self.hook_z = HookPoint()  # [batch, head, q_pos, d_head], pattern @ v

    @staticmethod
    def _split_heads(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        # x: [batch, pos, d_model], w: [head, d_model, d_head] -> [batch, head, pos, d_head]
        # One nn.Linear product for all heads, bias added inside it (as HF does)
        n_heads, d_model, d_head = w.shape
        w_rows = w.transpose(1, 2).reshape(n_heads * d_head, d_model)  # [head*d_head, d_model]
        y = F.linear(x, w_rows, None if b is None else b.reshape(-1))  # [batch, pos, head*d_head]
        return y.view(*x.shape[:-1], n_heads, d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # x: [batch, pos, d_model]; mask: [batch or 1, 1, q_pos, k_pos], 0 where allowed
        q = self.hook_q(self._split_heads(x, self.W_Q, self.b_Q))  # [batch, head, pos, d_head]
        k = self.hook_k(self._split_heads(x, self.W_K, self.b_K))  # [batch, kv_head, pos, d_head]
        v = self.hook_v(self._split_heads(x, self.W_V, self.b_V))  # [batch, kv_head, pos, d_head]
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)  # over d_head, each head on its own
        if self.rotary is not None:
            cos, sin = self.rotary.cos_sin(x.shape[1], x.device)  # [pos, d_head]
            q = self.hook_rot_q(Rotary.rotate(q, cos, sin))
            k = self.hook_rot_k(Rotary.rotate(k, cos, sin))
        k, v = self.kv_per_head(k), self.kv_per_head(v)  # [batch, head, pos, d_head]
        return self.attend(q, k, v, mask)

    def kv_per_head(self, kv: torch.Tensor) -> torch.Tensor:
        """[batch, kv_head, pos, d_head] -> [batch, head, pos, d_head]: with grouped-query
        attention each k/v head repeated for the query heads it serves."""
        groups = self.cfg.n_heads // self.cfg.n_kv_heads
        return kv.repeat_interleave(groups, dim=1) if groups > 1 else kv

    def qk_inputs(self) -> tuple[str, str] | None:
        """The hook points (under this module) whose tensors attend() multiplies into hook_qk,
        k before kv_per_head; None when the q and k it multiplies have no hook point of their
        own (Qwen3-style q/k norms without rotary positions)."""
        if self.rotary is not None:
            return "hook_rot_q", "hook_rot_k"
        return None if self.q_norm is not None else ("hook_q", "hook_k")

    @staticmethod
    def qk_from(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """q: [batch, head, q_pos, d_head], k: [batch, head, k_pos, d_head] ->
        [batch, head, q_pos, k_pos]: every query dotted with every key (before scaling)."""
        return q @ k.transpose(-1, -2)

    def scores_from(self, qk: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """q·k [batch, head, q_pos, k_pos] -> the scores the softmax reads: scaled, (Gemma 2:
        soft-capped,) plus the additive mask."""
        return scores_from(qk, mask, self.scale, self.softcap)  # [batch, head, q_pos, k_pos]

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: torch.Tensor) -> torch.Tensor:
        """softmax(q·kᵀ / √d_head + mask) · v, then the heads joined and projected by W_O.

        q: [batch, head, q_pos, d_head]; k, v: [batch, head, k_pos, d_head];
        mask: additive, broadcastable to [batch, head, q_pos, k_pos]. Returns [batch, q_pos, d_model].
        """
        qk = self.hook_qk(self.qk_from(q, k))  # [batch, head, q_pos, k_pos]
        scores = self.hook_scores(self.scores_from(qk, mask))  # [batch, head, q_pos, k_pos]
        pattern = self.hook_pattern(scores.softmax(dim=-1))  # [batch, head, q_pos, k_pos]
        z = self.hook_z(self.z_from(pattern, v))  # [batch, head, q_pos, d_head]
        return self.out_from(z)  # [batch, pos, d_model]

    @staticmethod
    def z_from(pattern: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """pattern [batch, head, q_pos, k_pos] @ v [batch, head, k_pos, d_head] ->
        [batch, head, q_pos, d_head]: each query's weighted sum of the values."""
        return pattern @ v

    def out_from(self, z: torch.Tensor) -> torch.Tensor:
        """z [batch, head, q_pos, d_head] -> [batch, q_pos, d_model]: the heads joined and
        projected by W_O, the bias added inside the product."""
        batch, n_heads, n_pos, d_head = z.shape
        z_cat = z.transpose(1, 2).reshape(batch, n_pos, n_heads * d_head)  # [batch, pos, h*d_head]
        w_o = self.W_O.reshape(n_heads * d_head, -1).T  # [d_model, head*d_head]
        return F.linear(z_cat, w_o, self.b_O)  # [batch, pos, d_model]

    def recipes(self) -> dict[str, tuple]:
        """Hook point -> (function, the hook points it reads), names under this module: what
        runner.record may recompute on first read with the forward pass's own function
        instead of keeping it: q·k from q and k (when they have hook points), z from the
        pattern and v."""
        found = {"hook_z": (lambda pattern, v: self.z_from(pattern, self.kv_per_head(v)),
                            ("hook_pattern", "hook_v"))}
        if self.qk_inputs() is not None:
            found["hook_qk"] = (lambda q, k: self.qk_from(q, self.kv_per_head(k)),
                                self.qk_inputs())
        return found

    def projection_recipes(self, x_hook: str) -> dict[str, tuple]:
        """q, k and v, recomputed from the hook point that holds this module's input (x_hook,
        a path from here: the block knows it) as recipes() recomputes the rest."""
        return {f"hook_{n.lower()}": (functools.partial(
            self._split_heads, w=getattr(self, f"W_{n}"), b=getattr(self, f"b_{n}")), (x_hook,))
            for n in "QKV"}
