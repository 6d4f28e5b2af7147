"""The whole model: embeddings, a stack of blocks, and the family's head.

Attention itself is computed in `model/attention.py`, `Attention.forward`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .attention import allowed_keys, attention_mask_bias  # noqa: F401 (their old home)
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


class HookedTransformer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = make_embed(cfg)
        self.blocks = nn.ModuleList(make_block(cfg, layer) for layer in range(cfg.n_layers))
        self.ln_final = make_norm(cfg) if cfg.block != "post_ln" else None
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
        x = self.run_blocks(resid, attention_mask, start=layer)  # [batch, pos, d_model]
        final = self.final(x)
        logits = self.hook_logits(self.logits_from_final(final)) if self.unembed is not None \
            else None
        pooled = self.pooler(final) if self.pooler is not None else None
        return ModelOutput(residual=x, final=final, logits=logits, pooled=pooled)

    # The pieces of the forward pass an analysis may run on its own, so that none of them
    # rebuilds the mask, the final norm or the head (sliding windows and soft-capping included).
    def layer_masks(self, attention_mask: torch.Tensor, dtype: torch.dtype,
                    device: torch.device | None = None) -> list[torch.Tensor]:
        """The additive mask each block gets ([batch, 1, q_pos, k_pos]), from attention_mask
        [batch, pos]; layers of one kind share one tensor."""
        attention_mask = attention_mask.to(device or attention_mask.device)
        by_window: dict[int | None, torch.Tensor] = {}
        for block in self.blocks:
            window = block.attn.window
            if window not in by_window:
                by_window[window] = attention_mask_bias(attention_mask, self.cfg.causal, dtype,
                                                        window)
        return [by_window[block.attn.window] for block in self.blocks]

    def run_blocks(self, resid: torch.Tensor, attention_mask: torch.Tensor, start: int = 0,
                   stop: int | None = None) -> torch.Tensor:
        """Blocks start .. stop - 1 on resid [batch, pos, d_model] (block `start`'s input),
        each with its own mask; returns the residual stream after block stop - 1."""
        masks = self.layer_masks(attention_mask, resid.dtype, resid.device)
        x = resid
        for layer in range(start, self.cfg.n_layers if stop is None else stop):
            x = self.blocks[layer](x, masks[layer])  # [batch, pos, d_model]
        return x

    def final(self, resid: torch.Tensor) -> torch.Tensor:
        """The final norm where the model has one: [..., d_model] -> [..., d_model]."""
        return self.ln_final(resid) if self.ln_final is not None else resid

    def logits_from_final(self, final: torch.Tensor) -> torch.Tensor:
        """Unembedding (and Gemma 2's soft-capping) of final vectors:
        [..., d_model] -> [..., vocab]."""
        logits = self.unembed(final)  # [..., vocab]
        cap = self.cfg.final_softcap
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        return logits

    def logits_from(self, resid: torch.Tensor) -> torch.Tensor:
        """The logits the model would give if `resid` [..., d_model] left the last block."""
        return self.logits_from_final(self.final(resid))
