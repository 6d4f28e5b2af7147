"""The building blocks: norms, embeddings and attention, each with its hook points (the
MLPs: mlp.py).

Shape vocabulary, used in every comment: batch, pos (= q_pos or k_pos), head, d_head,
d_model, d_mlp, vocab. Attention rows are queries, columns are keys, softmax is over keys.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig
from .hooks import HookPoint
from .mlp import ACTIVATION_FNS  # noqa: F401 (its old home: analysis/walkthrough/mlp.py)
from .rotary import Rotary, layer_rotary


# ----------------------------------------------------------------------------- norms
class LayerNorm(nn.Module):
    centred = True  # the mean is subtracted before dividing by the spread (RMSNorm: False)

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps
        self.hook_normalized = HookPoint()

    def gain(self) -> torch.Tensor:
        """[d_model]: what the normalised vector is multiplied by (before the bias)."""
        return self.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_normalized(self.normalize(x))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:  # the norm without its hook point
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)  # [batch, pos, d]


class RMSNorm(nn.Module):
    """Llama's norm: divide by the root mean square, no mean subtraction, no bias."""

    centred = False  # no mean subtracted (LayerNorm: True)

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps
        self.hook_normalized = HookPoint()

    def gain(self) -> torch.Tensor:
        """[d_model]: what the normalised vector is multiplied by."""
        return self.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_normalized(self.normalize(x))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:  # the norm without its hook point
        x32 = x.float()  # [batch, pos, d_model]
        scaled = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * scaled.to(x.dtype)


class GemmaRMSNorm(RMSNorm):
    """Gemma's RMSNorm: the gain is stored as (gain - 1), so a weight of 0 leaves x / rms(x)."""

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__(d_model, eps)
        nn.init.zeros_(self.weight)

    def gain(self) -> torch.Tensor:
        return 1.0 + self.weight.float()

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()  # [batch, pos, d_model]
        scaled = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (scaled * (1.0 + self.weight.float())).to(x.dtype)


def make_norm(cfg: TransformerConfig, size: int | None = None) -> nn.Module:
    """The family's norm over d_model (or over `size` numbers: a head's q and k)."""
    norm = {"rmsnorm": RMSNorm, "gemma_rmsnorm": GemmaRMSNorm}.get(cfg.norm, LayerNorm)
    return norm(size or cfg.d_model, cfg.norm_eps)


# ------------------------------------------------------------------------ embeddings
class LearnedEmbed(nn.Module):
    """BERT / RoBERTa / GPT-2: token (+ token type) + learned position, then LayerNorm for BERT
    (and, for ELECTRA, a linear layer from d_embed up to d_model)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_embed or cfg.d_model  # ELECTRA's embeddings are narrower (d_embed)
        self.W_E = nn.Embedding(cfg.d_vocab, d)
        self.W_pos = nn.Embedding(cfg.n_ctx + cfg.position_offset, d)
        self.W_type = nn.Embedding(cfg.n_token_types, d) if cfg.n_token_types else None
        norm = RMSNorm if cfg.norm == "rmsnorm" else LayerNorm
        self.ln = norm(d, cfg.norm_eps) if cfg.embed_norm else None
        self.project = nn.Linear(d, cfg.d_model) if d != cfg.d_model else None
        # [batch, pos, d_model], the embeddings widened (ELECTRA only)
        self.hook_project = HookPoint() if self.project is not None else None
        self.hook_tok = HookPoint()  # [batch, pos, d_model]
        # Only models with segment embeddings get the hook: a hook point must always fire.
        self.hook_type = HookPoint() if self.W_type is not None else None  # [batch, pos, d_model]
        self.hook_pos = HookPoint()  # [batch, pos, d_model]
        self.hook_sum = HookPoint()  # [batch, pos, d_model]

    def position_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.cfg.position_offset == 0:
            return torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        # RoBERTa: real tokens are numbered from padding_idx + 1 (= the offset), padding keeps
        # padding_idx; OPT's offset is 2 whatever its padding id, padding keeps 1.
        real = input_ids.ne(self.cfg.pad_token_id).int()
        return torch.cumsum(real, dim=1) * real + (self.cfg.position_offset - 1)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        x = self.hook_tok(self.W_E(input_ids))  # [batch, pos, d_model]
        if self.W_type is not None:
            x = x + self.hook_type(self.W_type(token_type_ids))
        x = x + self.hook_pos(self.W_pos(self.position_ids(input_ids)))
        x = self.hook_sum(x)
        x = self.ln(x) if self.ln is not None else x
        return self.hook_project(self.project(x)) if self.project is not None else x


class TokenEmbed(nn.Module):
    """Llama: token embedding only; positions enter later as a rotation of q and k.
    Gemma multiplies it by sqrt(d_model) (embed_scale)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_model)
        # Gemma rounds sqrt(d_model) to the weights' dtype before multiplying
        self.scale = float(torch.tensor(cfg.d_model ** 0.5)) if cfg.embed_scale else None
        self.hook_tok = HookPoint()  # [batch, pos, d_model]

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        x = self.W_E(input_ids)  # [batch, pos, d_model]
        return self.hook_tok(x * self.scale if self.scale is not None else x)


def sinusoidal_table(n_pos: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same)."""
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]  # [pos, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [d_model / 2]
    angle = pos / torch.pow(10000.0, two_i / d_model)  # [pos, d_model / 2]
    table = torch.zeros(n_pos, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


class SinusoidalEmbed(nn.Module):
    """The original transformer: token embedding * sqrt(d_model) + a fixed sinusoidal table."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.scale = math.sqrt(cfg.d_model) if cfg.embed_scale else 1.0
        self.register_buffer("pe", sinusoidal_table(cfg.n_ctx, cfg.d_model), persistent=False)
        self.hook_tok = HookPoint()  # [batch, pos, d_model]
        self.hook_pos = HookPoint()  # [batch, pos, d_model]
        self.hook_sum = HookPoint()  # [batch, pos, d_model]

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        tok = self.hook_tok(self.W_E(input_ids) * self.scale)
        pos = self.hook_pos(self.pe[: input_ids.shape[1]].expand_as(tok))
        return self.hook_sum(tok + pos)


def make_embed(cfg: TransformerConfig) -> nn.Module:
    return {"learned": LearnedEmbed, "rotary": TokenEmbed, "sinusoidal": SinusoidalEmbed}[
        cfg.positions
    ](cfg)


# ------------------------------------------------------------------------- attention
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


def normal_in_order(w: torch.Tensor, std: float) -> None:
    """Fill `w` from N(0, std²) in the order of its own indices ([head, ...] first), whatever
    its layout in memory: nn.init.normal_ on one of the views above would follow the storage
    instead, and the same seed would no longer make the same model (the shipped tiny models'
    training replays from their seed)."""
    with torch.no_grad():
        w.copy_(torch.empty(w.shape, dtype=w.dtype).normal_(std=std))


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
        self.scale = 1.0 / math.sqrt(dh) if cfg.attn_scale is None else cfg.attn_scale
        self.softcap = cfg.attn_softcap  # Gemma 2: scores squashed into (-cap, cap)
        self.window = cfg.sliding_window if cfg.layer_type(layer) == "sliding" else None
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
        if self.softcap is None:
            return torch.add(mask, qk, alpha=self.scale)  # [batch, head, q_pos, k_pos]
        capped = torch.tanh(qk * self.scale / self.softcap) * self.softcap  # cap·tanh(s / cap)
        return capped + mask  # [batch, head, q_pos, k_pos]

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
