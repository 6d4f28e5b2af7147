"""The whole model: embeddings, a stack of blocks, and the family's head.

Attention itself is computed in `model/layers.py`, class `Attention`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .blocks import make_block
from .config import TransformerConfig
from .hooks import HookPoint, name_hook_points
from .layers import make_embed, make_norm


@dataclass
class ModelOutput:
    residual: torch.Tensor  # [batch, pos, d_model], after the last block (before any final norm)
    final: torch.Tensor  # [batch, pos, d_model], after the final norm where there is one
    logits: torch.Tensor | None  # [batch, pos, vocab], decoders only
    pooled: torch.Tensor | None  # [batch, d_model], BERT's pooler on the first token


class Pooler(nn.Module):
    """BERT's pooler: tanh(W [CLS] + b)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.hook_out = HookPoint()  # [batch, d_model]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_out(torch.tanh(self.dense(x[:, 0])))


def attention_mask_bias(
    attention_mask: torch.Tensor, causal: bool, dtype: torch.dtype
) -> torch.Tensor:
    """Additive mask [batch, 1, q_pos, k_pos]: 0 where a query may look, the dtype's minimum
    where it may not (padding keys; keys after the query for causal models).

    The minimum rather than -inf keeps a row with every key masked finite, as HF does;
    exp(min - max) is exactly 0 in float32, so masked cells get exactly zero attention.
    """
    n_pos = attention_mask.shape[1]
    allowed = attention_mask.bool()[:, None, None, :]  # [batch, 1, 1, k_pos]
    if causal:
        lower = torch.ones(n_pos, n_pos, dtype=torch.bool, device=attention_mask.device).tril()
        allowed = allowed & lower  # [batch, 1, q_pos, k_pos]
    zero = torch.zeros((), dtype=dtype, device=attention_mask.device)
    blocked = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=attention_mask.device)
    return torch.where(allowed, zero, blocked)


class HookedTransformer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = make_embed(cfg)
        self.blocks = nn.ModuleList(make_block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = make_norm(cfg) if cfg.block == "pre_ln" else None
        self.pooler = Pooler(cfg.d_model) if cfg.has_pooler else None
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab, bias=False) if cfg.has_lm_head else None
        if self.unembed is not None and cfg.tie_embeddings:
            self.unembed.weight = self.embed.W_E.weight
        self.hook_logits = HookPoint() if cfg.has_lm_head else None  # [batch, pos, vocab]
        self.hook_names: tuple[str, ...] = tuple(name_hook_points(self))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> ModelOutput:
        # input_ids, attention_mask, token_type_ids: [batch, pos]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embed(input_ids, token_type_ids)  # [batch, pos, d_model]
        return self.forward_from(0, x, attention_mask)

    def forward_from(self, layer: int, resid: torch.Tensor,
                     attention_mask: torch.Tensor) -> ModelOutput:
        """The model from block `layer` on, given that block's input: resid [batch, pos,
        d_model], attention_mask [batch, pos]. forward() is forward_from(0, embeddings); a
        sweep that changes only later layers runs the earlier ones once (analysis/ablation.py)."""
        mask = attention_mask_bias(attention_mask.to(resid.device), self.cfg.causal, resid.dtype)
        x = resid
        for block in self.blocks[layer:]:
            x = block(x, mask)  # [batch, pos, d_model]
        final = self.ln_final(x) if self.ln_final is not None else x
        logits = self.hook_logits(self.unembed(final)) if self.unembed is not None else None
        pooled = self.pooler(final) if self.pooler is not None else None
        return ModelOutput(residual=x, final=final, logits=logits, pooled=pooled)
