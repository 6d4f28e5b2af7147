"""What every task gives the training loop (train.py) besides the optimiser: which model to
build, where batches come from, the loss, what to measure, and which attention to photograph.
The tasks themselves: tasks.py (characters, induction, reversal) and english_task.py."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from analysis.induction import pattern_cache
from model.config import TransformerConfig
from model.hook_names import hook_names
from model.layers import normal_in_order
from model.transformer import HookedTransformer


def _own_config(**fields) -> TransformerConfig:
    base = dict(family="own", block="pre_ln", norm="layernorm", act="gelu",
                has_lm_head=True, causal=True)
    base.update(fields)
    return TransformerConfig(**base)


def next_token_loss(model, ids: torch.Tensor) -> torch.Tensor:
    logits = model(ids).logits  # [batch, pos, vocab]
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def init_attention(model: nn.Module) -> nn.Module:
    """Draw every attention weight from N(0, 1/d_model). The layers' default, 0.02, suits
    d_model 768 (GPT-2); at d_model 64 it leaves every pattern uniform for hundreds of steps
    (q.k stays near 0), and induction heads took ten times longer to form."""
    for name, p in model.named_parameters():
        if name.rsplit(".", 1)[-1] in ("W_Q", "W_K", "W_V", "W_O"):
            normal_in_order(p, std=p.shape[-1 if name.endswith("W_O") else 1] ** -0.5)
    return model


class Task:
    key = ""
    title = ""
    encoder_decoder = False
    chars = ""  # the character tokenizer's vocabulary (unknown characters read as "?")

    def config(self, n_layers: int, n_heads: int, d_model: int):
        raise NotImplementedError

    def build(self, cfg) -> nn.Module:
        return init_attention(HookedTransformer(cfg))

    def batch(self, gen: torch.Generator, batch_size: int) -> dict:
        raise NotImplementedError

    def loss(self, model, batch: dict) -> torch.Tensor:
        return next_token_loss(model, batch["ids"])

    def n_tokens(self, batch: dict) -> int:
        return batch["ids"].numel()

    def probe(self) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of the fixed example the snapshots show."""
        raise NotImplementedError

    def snapshot(self, model) -> np.ndarray:
        """[layer, head, q_pos, k_pos] attention on the probe (float16, to keep many)."""
        ids = torch.tensor([[self.chars.index(c) for c in self.probe()[0]]])  # [1, pos]
        cache = pattern_cache(model, ids)
        return torch.stack([cache[name][0] for name in hook_names(model.cfg).every_layer(
            "attn", "pattern")]).half().numpy()

    def evaluate(self, model) -> dict[str, float]:
        return {}

    def tokenizer_data(self) -> dict:  # what saving.py writes as tokenizer.json
        return {"chars": self.chars, "unk": "?"}
