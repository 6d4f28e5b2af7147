"""The building blocks: norms and embeddings, each with its hook points (attention:
attention.py; the MLPs: mlp.py).

Shape vocabulary, used in every comment: batch, pos (= q_pos or k_pos), head, d_head,
d_model, d_mlp, vocab. Attention rows are queries, columns are keys, softmax is over keys.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig
from .hooks import HookPoint
from .mlp import ACTIVATION_FNS  # noqa: F401 (its old home: analysis/walkthrough/mlp.py)
from .rotary import Rotary  # noqa: F401 (analysis/positions.py reads it here)


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


# ------------------------------------------------------------------------ initialising
def normal_in_order(w: torch.Tensor, std: float) -> None:
    """Fill `w` from N(0, std²) in the order of its own indices ([head, ...] first), whatever
    its layout in memory: nn.init.normal_ on one of attention.py's views would follow the storage
    instead, and the same seed would no longer make the same model (the shipped tiny models'
    training replays from their seed)."""
    with torch.no_grad():
        w.copy_(torch.empty(w.shape, dtype=w.dtype).normal_(std=std))
