"""Transformer blocks. Post-LN (BERT, the original transformer), pre-LN (GPT-2, Llama),
parallel (GPT-NeoX) and sandwich (Gemma 2 and 3) are small classes rather than one class full
of flags."""

from __future__ import annotations

import torch
from torch import nn

from .config import TransformerConfig
from .hooks import HookPoint
from .attention import Attention
from .layers import make_norm
from .mlp import make_mlp


def part_recipes(block: nn.Module, attn_input: str, mlp_input: str) -> dict[str, tuple]:
    """What every block can recompute from other hook points (names under the block, for
    runner.record): attention's q, k and v from the hook point that holds its input
    (`attn_input`) and its output from its z; the MLP's pre-activations from the hook point
    that holds its input (`mlp_input`) and its output from its activation. Each with the
    layers the forward pass used, so the numbers are the same bit for bit."""
    found = {f"attn.{hook}": recipe
             for hook, recipe in block.attn.projection_recipes(attn_input).items()}
    found["hook_attn_out"] = (block.attn.out_from, ("attn.hook_z",))
    if block.mlp is not None:
        for hook, layer in block.mlp.pre_linears.items():
            found[f"mlp.{hook}"] = (getattr(block.mlp, layer), (mlp_input,))
        found["hook_mlp_out"] = (block.mlp.W_out, ("mlp.hook_post",))
    return found


def norm_recipe(norm: nn.Module, source: str, added: str | None = None) -> tuple:
    """A norm's output recomputed from the hook point it read (`source`), or from the sum of
    two (`source` + `added`), without passing through its hook point."""
    if added is None:
        return norm.normalize, (source,)
    return (lambda x, y: norm.normalize(x + y)), (source, added)


def same(x: torch.Tensor) -> torch.Tensor:
    """A hook point that holds the very tensor another one holds (post-LN: the stream after
    a part is the norm's output)."""
    return x


class _Block(nn.Module):
    def recipes(self) -> dict[str, tuple]:
        """Hook point -> (function, the hook points it reads), names under this block: what
        runner.record may recompute on first read instead of keeping (part_recipes). Pre-LN
        blocks: the norms read the stream, the parts read the norms."""
        found = part_recipes(self, "ln1.hook_normalized", "ln2.hook_normalized")
        found["ln1.hook_normalized"] = norm_recipe(self.ln1, "hook_resid_pre")
        return found

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__()
        self.ln1 = make_norm(cfg)
        self.attn = Attention(cfg, layer)
        self.mlp = make_mlp(cfg)
        self.ln2 = make_norm(cfg) if self.mlp is not None else None
        self.hook_resid_pre = HookPoint()  # [batch, pos, d_model], the block's input
        self.hook_attn_out = HookPoint()  # [batch, pos, d_model], attention after W_O
        self.hook_resid_mid = HookPoint()  # [batch, pos, d_model], between attention and MLP
        # [batch, pos, d_model], MLP output; attention-only blocks have no MLP and no such hook
        self.hook_mlp_out = HookPoint() if self.mlp is not None else None
        self.hook_resid_post = HookPoint()  # [batch, pos, d_model], the block's output


class PostLNBlock(_Block):
    """x -> LN(x + Attn(x)) -> LN(x + MLP(x)). ln1 follows attention, ln2 follows the MLP."""

    def recipes(self) -> dict[str, tuple]:
        # ln2's output is the block's output, kept
        return {**part_recipes(self, "hook_resid_pre", "hook_resid_mid"),
                "ln1.hook_normalized": norm_recipe(self.ln1, "hook_resid_pre", "hook_attn_out"),
                "hook_resid_mid": (same, ("ln1.hook_normalized",))}

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)  # [batch, pos, d_model]
        attn_out = self.hook_attn_out(self.attn(x, mask))
        x = self.hook_resid_mid(self.ln1(x + attn_out))
        if self.mlp is None:
            return self.hook_resid_post(x)
        mlp_out = self.hook_mlp_out(self.mlp(x))
        return self.hook_resid_post(self.ln2(x + mlp_out))


class PreLNBlock(_Block):
    """x -> x + Attn(LN(x)) -> x + MLP(LN(x)). ln1 precedes attention, ln2 precedes the MLP."""

    def recipes(self) -> dict[str, tuple]:
        found = {**super().recipes(),
                 "hook_resid_mid": (torch.add, ("hook_resid_pre", "hook_attn_out"))}
        if self.mlp is not None:
            found["ln2.hook_normalized"] = norm_recipe(self.ln2, "hook_resid_mid")
        return found

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)  # [batch, pos, d_model]
        attn_out = self.hook_attn_out(self.attn(self.ln1(x), mask))
        x = self.hook_resid_mid(x + attn_out)
        if self.mlp is None:
            return self.hook_resid_post(x)
        mlp_out = self.hook_mlp_out(self.mlp(self.ln2(x)))
        return self.hook_resid_post(x + mlp_out)


class ParallelBlock(_Block):
    """x -> x + Attn(LN1(x)) + MLP(LN2(x)) (GPT-NeoX, Pythia): attention and the MLP both read
    the block's input, so there is no stream between them (no hook_resid_mid)."""

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__(cfg, layer)
        del self.hook_resid_mid  # a hook point must always fire, and nothing lies in between

    def recipes(self) -> dict[str, tuple]:
        return {**super().recipes(), "ln2.hook_normalized": norm_recipe(self.ln2, "hook_resid_pre")}

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)  # [batch, pos, d_model]
        attn_out = self.hook_attn_out(self.attn(self.ln1(x), mask))
        mlp_out = self.hook_mlp_out(self.mlp(self.ln2(x)))
        return self.hook_resid_post(mlp_out + attn_out + x)  # HF's order of the sum


class SandwichBlock(_Block):
    """x -> x + LN1'(Attn(LN1(x))) -> x + LN2'(MLP(LN2(x))) (Gemma 2 and 3): a norm before and
    after each part. hook_attn_out and hook_mlp_out are what attention and the MLP computed,
    as in every block; what is added to the stream is ln1_post's and ln2_post's output."""

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__(cfg, layer)
        self.ln1_post = make_norm(cfg)
        self.ln2_post = make_norm(cfg)

    def recipes(self) -> dict[str, tuple]:
        return {**super().recipes(),
                "ln1_post.hook_normalized": norm_recipe(self.ln1_post, "hook_attn_out"),
                "hook_resid_mid": (torch.add, ("hook_resid_pre", "ln1_post.hook_normalized")),
                "ln2.hook_normalized": norm_recipe(self.ln2, "hook_resid_mid"),
                "ln2_post.hook_normalized": norm_recipe(self.ln2_post, "hook_mlp_out")}

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)  # [batch, pos, d_model]
        attn_out = self.hook_attn_out(self.attn(self.ln1(x), mask))  # [batch, pos, d_model]
        x = self.hook_resid_mid(x + self.ln1_post(attn_out))
        mlp_out = self.hook_mlp_out(self.mlp(self.ln2(x)))  # [batch, pos, d_model]
        return self.hook_resid_post(x + self.ln2_post(mlp_out))


BLOCK_CLASSES = {"post_ln": PostLNBlock, "pre_ln": PreLNBlock, "parallel": ParallelBlock,
                 "sandwich": SandwichBlock}


def make_block(cfg: TransformerConfig, layer: int = 0) -> nn.Module:
    return BLOCK_CLASSES[cfg.block](cfg, layer)
