"""The MLPs: up-projection, activation, down-projection, and Llama's gated variant, each
with its hook points. Shapes as in layers.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .config import ACTIVATIONS, TransformerConfig
from .hooks import HookPoint

# The function of each name in config.ACTIVATIONS (the one list of names), in that order.
ACTIVATION_FNS = dict(zip(ACTIVATIONS, (
    F.gelu,  # gelu: exact erf GELU (BERT)
    lambda x: F.gelu(x, approximate="tanh"),  # gelu_new: GPT-2's tanh approximation
    F.relu,  # relu
    F.silu,  # silu: Llama's SwiGLU gate
), strict=True))


# ------------------------------------------------------------------------------ MLPs
class MLP(nn.Module):
    """Up-projection, activation, down-projection (BERT, GPT-2, the original transformer)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.W_in = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.mlp_bias)
        self.W_out = nn.Linear(cfg.d_mlp, cfg.d_model, bias=cfg.mlp_bias)
        self.act = ACTIVATION_FNS[cfg.act]
        self.hook_pre = HookPoint()  # [batch, pos, d_mlp], before the activation
        self.hook_post = HookPoint()  # [batch, pos, d_mlp], after the activation

    post_inputs = ("hook_pre",)  # the hook points post_from reads, in its order
    pre_linears = {"hook_pre": "W_in"}  # hook point -> the layer that makes it from the input

    def post_from(self, pre: torch.Tensor) -> torch.Tensor:
        return self.act(pre)  # [batch, pos, d_mlp]

    def recipes(self) -> dict[str, tuple]:
        """The activation, recomputed from its inputs (Attention.recipes says why)."""
        return {"hook_post": (self.post_from, self.post_inputs)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.hook_pre(self.W_in(x))  # [batch, pos, d_mlp]
        return self.W_out(self.hook_post(self.post_from(pre)))  # [batch, pos, d_model]


class GatedMLP(nn.Module):
    """Llama's SwiGLU: act(x W_gate) * (x W_in), then down-projection."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.W_gate = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.mlp_bias)
        self.W_in = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.mlp_bias)
        self.W_out = nn.Linear(cfg.d_mlp, cfg.d_model, bias=cfg.mlp_bias)
        self.act = ACTIVATION_FNS[cfg.act]
        self.hook_pre = HookPoint()  # [batch, pos, d_mlp], gate before the activation
        self.hook_pre_linear = HookPoint()  # [batch, pos, d_mlp], the ungated up-projection
        self.hook_post = HookPoint()  # [batch, pos, d_mlp], act(gate) * up

    post_inputs = ("hook_pre", "hook_pre_linear")  # the hook points post_from reads, in order
    pre_linears = {"hook_pre": "W_gate", "hook_pre_linear": "W_in"}  # hook -> its layer

    def post_from(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return self.act(gate) * up  # [batch, pos, d_mlp]

    recipes = MLP.recipes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.hook_pre(self.W_gate(x))  # [batch, pos, d_mlp]
        up = self.hook_pre_linear(self.W_in(x))  # [batch, pos, d_mlp]
        return self.W_out(self.hook_post(self.post_from(gate, up)))  # [batch, pos, d_model]


def make_mlp(cfg: TransformerConfig) -> nn.Module | None:
    if cfg.attn_only:
        return None
    return GatedMLP(cfg) if cfg.gated_mlp else MLP(cfg)
