"""One frozen configuration for every family of transformer this project runs.

The family presets (BERT, GPT-2, Llama, sinusoidal) are just particular values of
these fields; `model/registry.py` builds them from a checkpoint's config.json.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

FAMILIES = ("bert", "gpt2", "llama", "sinusoidal")
POSITIONS = ("learned", "sinusoidal", "rotary")
NORMS = ("layernorm", "rmsnorm")
BLOCKS = ("post_ln", "pre_ln")
ACTIVATIONS = ("gelu", "gelu_new", "relu", "silu")


@dataclass(frozen=True)
class TransformerConfig:
    """Architecture of one model. Rows of every attention matrix are queries."""

    family: str
    d_model: int
    n_heads: int
    n_layers: int
    n_ctx: int  # longest sequence the positions allow
    d_vocab: int
    d_mlp: int  # 0 only for attention-only models (attn_only=True)
    n_kv_heads: int | None = None  # None: same as n_heads (no grouped-query attention)
    head_dim: int | None = None  # None: d_model // n_heads
    positions: str = "learned"
    norm: str = "layernorm"
    block: str = "pre_ln"
    act: str = "gelu"
    gated_mlp: bool = False  # SwiGLU-style MLP: act(x W_gate) * (x W_in)
    attn_only: bool = False
    causal: bool = True
    n_token_types: int = 0  # BERT's segment embeddings (sentence A / B)
    position_offset: int = 0  # RoBERTa numbers positions from padding_idx + 1
    pad_token_id: int | None = None
    norm_eps: float = 1e-5
    attn_bias: bool = True
    mlp_bias: bool = True
    rope_theta: float = 10000.0
    has_pooler: bool = False  # BERT's [CLS] pooler (dense + tanh)
    has_lm_head: bool = False  # decoders: unembedding to vocabulary logits
    tie_embeddings: bool = False
    embed_scale: bool = False  # original transformer: token embedding * sqrt(d_model)
    embed_norm: bool = False  # BERT: LayerNorm right after the embedding sum

    def __post_init__(self) -> None:
        # Each check is a lambda, run in order, so a bad value is reported as a ValueError
        # before a later check could divide by it (n_heads=0) or compare it ("32" < 1).
        sizes = (self.d_model, self.n_heads, self.n_layers, self.n_ctx, self.d_vocab, self.d_mlp,
                 self.kv_heads, 1 if self.head_dim is None else self.head_dim)
        checks = [
            (lambda: self.family in FAMILIES,
             f"family must be one of {FAMILIES}, got {self.family!r}"),
            (lambda: self.positions in POSITIONS, f"positions must be one of {POSITIONS}"),
            (lambda: self.norm in NORMS, f"norm must be one of {NORMS}"),
            (lambda: self.block in BLOCKS, f"block must be one of {BLOCKS}"),
            (lambda: self.act in ACTIVATIONS,
             f"act must be one of {ACTIVATIONS}, got {self.act!r}"),
            (lambda: all(isinstance(v, int) and not isinstance(v, bool) for v in sizes),
             "d_model, n_heads, n_layers, n_ctx, d_vocab, d_mlp, n_kv_heads and head_dim must be "
             f"integers, got {sizes}"),
            (lambda: min(self.d_model, self.n_heads, self.n_layers, self.n_ctx, self.d_vocab) > 0,
             "d_model, n_heads, n_layers, n_ctx and d_vocab must be positive"),
            (lambda: self.d_mlp >= 0 and (self.attn_only or self.d_mlp > 0),
             "d_mlp must be >= 0, and positive unless attn_only"),
            (lambda: self.kv_heads > 0, f"n_kv_heads must be positive, got {self.n_kv_heads}"),
            (lambda: self.head_dim is None or self.head_dim > 0,
             f"head_dim must be positive, got {self.head_dim}"),
            (lambda: self.head_dim is not None or self.d_model % self.n_heads == 0,
             f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}"),
            (lambda: self.n_heads % self.kv_heads == 0,
             f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.kv_heads}"),
            (lambda: self.positions != "rotary" or self.d_head % 2 == 0,
             "rotary needs an even d_head"),
            (lambda: self.n_token_types >= 0 and self.position_offset >= 0, "counts must be >= 0"),
        ]
        for ok, message in checks:
            if not ok():
                raise ValueError(message)

    @property
    def d_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    @property
    def is_decoder(self) -> bool:
        return self.causal

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TransformerConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config fields: {unknown}")
        return cls(**data)
