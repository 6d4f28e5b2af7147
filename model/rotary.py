"""Rotary positions (RoPE): q and k are rotated by an angle that grows with the position.

Llama's "rotate half" layout: dimension i is paired with i + rotary_dim / 2. GPT-NeoX (Pythia)
and some Phi models rotate only the first rotary_dim numbers of each head and pass the rest
through. Llama 3 and Gemma 3 stretch the slow frequencies ("rope scaling") so that the model
reaches further than it was trained on; the frequencies are computed here exactly as Hugging
Face computes them (`transformers.modeling_rope_utils`), so the rotations match bit for bit.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import TransformerConfig


def inverse_frequencies(dim: int, theta: float,
                        cfg: TransformerConfig | None = None) -> torch.Tensor:
    """[dim / 2] angles per position: theta^(-2i/dim), rescaled as cfg.rope_scaling says."""
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)
    if cfg is None or cfg.rope_scaling == "none":
        return inv_freq
    if cfg.rope_scaling == "linear":  # positions divided by the factor
        return inv_freq / cfg.rope_factor
    # llama3: long wavelengths divided by the factor, short ones kept, a smooth blend between
    factor, low, high = cfg.rope_factor, cfg.rope_low_freq_factor, cfg.rope_high_freq_factor
    old_ctx = cfg.rope_original_ctx
    wavelen = 2 * math.pi / inv_freq  # [dim / 2]
    scaled = torch.where(wavelen > old_ctx / low, inv_freq / factor, inv_freq)
    smooth = (old_ctx / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old_ctx / high) * ~(wavelen > old_ctx / low)
    return torch.where(medium, smoothed, scaled)


class Rotary(nn.Module):
    """The rotation of q and k for one layer (Gemma 3's sliding layers have their own base)."""

    def __init__(self, d_head: int, theta: float, cfg: TransformerConfig | None = None,
                 rotary_dim: int | None = None) -> None:
        super().__init__()
        self.rotary_dim = rotary_dim or d_head
        inv_freq = inverse_frequencies(self.rotary_dim, theta, cfg)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # [rotary_dim / 2]

    def cos_sin(self, n_pos: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.arange(n_pos, device=device, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq.to(device))  # [pos, rotary_dim / 2]
        emb = torch.cat([freqs, freqs], dim=-1)  # [pos, rotary_dim]
        return emb.cos(), emb.sin()

    @staticmethod
    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        # x: [batch, head, pos, d_head]; cos, sin: [pos, rotary_dim]
        rot_dim = cos.shape[-1]
        if rot_dim < x.shape[-1]:  # partial rotary: the rest passes through unrotated
            part, rest = x[..., :rot_dim], x[..., rot_dim:]
            return torch.cat([Rotary.rotate(part, cos, sin), rest], dim=-1)
        half = rot_dim // 2
        rotated_half = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated_half * sin


def layer_rotary(cfg: TransformerConfig, layer: int) -> Rotary | None:
    """The rotation layer `layer` uses, or None for a model without rotary positions."""
    if cfg.positions != "rotary":
        return None
    if cfg.layer_type(layer) == "sliding" and cfg.rope_local_theta is not None:
        return Rotary(cfg.d_head, cfg.rope_local_theta, None, cfg.rotary_dim)
    return Rotary(cfg.d_head, cfg.rope_theta, cfg, cfg.rotary_dim)
