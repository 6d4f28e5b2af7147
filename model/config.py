"""One frozen configuration for every family of transformer this project runs.

The family presets (BERT, GPT-2, Llama, this project's own) are just particular values of
these fields; `model/registry.py` builds them from a checkpoint's config.json.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

# "own": this project's models (training/). Each family names the converter of its weights
# (model/convert.py, model/convert_decoders.py, model/seq2seq_families.py); Qwen, Mistral
# and Gemma are "llama", Marian is "bart".
FAMILIES = ("bert", "gpt2", "llama", "own", "neox", "opt", "gpt_neo", "phi3", "bart", "t5")
# Names in config files written before they were renamed.
LEGACY_NAMES = {"head_dim": "d_head"}
LEGACY_FAMILIES = {"sinusoidal": "own"}
POSITIONS = ("learned", "sinusoidal", "rotary", "relative")  # relative: T5's bias
# gemma_rmsnorm: RMSNorm whose gain is (1 + weight), as Gemma stores it
NORMS = ("layernorm", "rmsnorm", "gemma_rmsnorm")
# parallel: attention and MLP read the same input (GPT-NeoX); sandwich: a norm before and
# after each of them (Gemma 2 and 3)
BLOCKS = ("post_ln", "pre_ln", "parallel", "sandwich")
ROPE_SCALINGS = ("none", "linear", "llama3")
LAYER_TYPES = ("full", "sliding")  # every earlier key, or only the last sliding_window ones
ACTIVATIONS = ("gelu", "gelu_new", "relu", "silu")

# Refused before anything is allocated, so a typo or a hostile config.json (vocab_size 10**12)
# fails at once with a message instead of asking for terabytes. The model is held in float32:
# 16e9 parameters is 64 GB, room for a 7B or 13B model on a machine that has the memory.
MAX_PARAMS = 16_000_000_000
# Bounds on single sizes, far above any model this app runs (Llama 3: d_vocab 128,256,
# d_model 4,096, 32 layers, n_ctx 131,072). n_layers is tight because every layer is a module.
MAX_SIZES = {"d_model": 1 << 16, "n_heads": 1 << 12, "n_layers": 1 << 10, "n_ctx": 1 << 20,
             "d_vocab": 1 << 22, "d_mlp": 1 << 18, "d_head": 1 << 12, "n_token_types": 1 << 10,
             "position_offset": 1 << 16}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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
    n_kv_heads: int | None = None  # None means n_heads (no grouped-query attention); filled in
    d_head: int | None = None  # None means d_model // n_heads; filled in
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
    attn_out_bias: bool | None = None  # a bias on W_O; None means as attn_bias (Qwen2: none)
    attn_scale: float | None = None  # scores = q·k * attn_scale; None means 1/sqrt(d_head)
    attn_softcap: float | None = None  # Gemma 2: scores -> cap * tanh(scores / cap)
    final_softcap: float | None = None  # Gemma 2: logits -> cap * tanh(logits / cap)
    qk_norm: bool = False  # Qwen3, Gemma 3: a norm over d_head on each head's q and k
    rotary_dim: int | None = None  # rotate only the first rotary_dim of d_head (NeoX); None: all
    rope_scaling: str = "none"  # "linear": positions / rope_factor; "llama3": Llama 3.1's
    rope_factor: float = 1.0
    rope_low_freq_factor: float = 1.0  # llama3 only, as in its config.json
    rope_high_freq_factor: float = 4.0  # llama3 only
    rope_original_ctx: int = 8192  # llama3 only: original_max_position_embeddings
    rope_local_theta: float | None = None  # Gemma 3: sliding layers' own base, unscaled
    sliding_window: int | None = None  # keys a "sliding" layer's query sees, itself included
    layer_types: tuple[str, ...] | None = None  # per layer "full" or "sliding"; None: all full
    d_embed: int | None = None  # ELECTRA: embeddings this wide, projected up to d_model

    def __post_init__(self) -> None:
        # Each check is a lambda, run in order, so a bad value is reported as a ValueError
        # before a later check could divide by it (n_heads=0), compare it ("32" < 1) or size a
        # tensor by it: every loading path builds a config before it allocates the model.
        self._fill_in()
        sizes = {"d_model": self.d_model, "n_heads": self.n_heads, "n_layers": self.n_layers,
                 "n_ctx": self.n_ctx, "d_vocab": self.d_vocab, "d_mlp": self.d_mlp,
                 "n_kv_heads": self.n_kv_heads, "d_head": self.d_head,
                 "n_token_types": self.n_token_types, "position_offset": self.position_offset,
                 "pad_token_id": self.pad_token_id, "d_embed": self.d_embed}
        not_ints = [f"{k}={v!r}" for k, v in sizes.items() if v is not None and not _is_int(v)]
        too_big = [f"{k}={sizes[k]:,} (limit {limit:,})" for k, limit in MAX_SIZES.items()
                   if _is_int(sizes[k]) and sizes[k] > limit]
        not_flags = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                     if f.type == "bool" and not isinstance(getattr(self, f.name), bool)]
        # (f.type is the annotation's text, "bool", under `from __future__ import annotations`)
        checks = [
            (lambda: self.family in FAMILIES,
             f"family must be one of {FAMILIES}, got {self.family!r}"),
            (lambda: self.positions in POSITIONS, f"positions must be one of {POSITIONS}"),
            (lambda: self.norm in NORMS, f"norm must be one of {NORMS}"),
            (lambda: self.block in BLOCKS, f"block must be one of {BLOCKS}"),
            (lambda: self.act in ACTIVATIONS,
             f"act must be one of {ACTIVATIONS}, got {self.act!r}"),
            (lambda: not not_ints,
             "d_model, n_heads, n_layers, n_ctx, d_vocab, d_mlp, n_kv_heads, d_head, "
             "n_token_types, position_offset and pad_token_id must be integers, got "
             + ", ".join(not_ints)),
            (lambda: not not_flags, "flags must be true or false, got " + ", ".join(not_flags)),
            (lambda: _is_number(self.norm_eps) and self.norm_eps >= 0,
             f"norm_eps must be a finite number >= 0, got {self.norm_eps!r}"),
            (lambda: _is_number(self.rope_theta) and self.rope_theta > 0,
             f"rope_theta must be a finite positive number, got {self.rope_theta!r}"),
            (lambda: min(self.d_model, self.n_heads, self.n_layers, self.n_ctx, self.d_vocab) > 0,
             "d_model, n_heads, n_layers, n_ctx and d_vocab must be positive"),
            (lambda: not too_big, "sizes beyond any model this app can run: " + ", ".join(too_big)),
            (lambda: self.d_mlp >= 0 and (self.attn_only or self.d_mlp > 0),
             "d_mlp must be >= 0, and positive unless attn_only"),
            (lambda: self.n_kv_heads > 0, f"n_kv_heads must be positive, got {self.n_kv_heads}"),
            (lambda: self.d_head is not None,
             f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}"),
            (lambda: self.d_head > 0, f"d_head must be positive, got {self.d_head}"),
            (lambda: self.n_heads % self.n_kv_heads == 0,
             f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.n_kv_heads}"),
            (lambda: self.positions != "rotary" or self.d_head % 2 == 0,
             "rotary needs an even d_head"),
            (lambda: self.n_token_types >= 0 and self.position_offset >= 0, "counts must be >= 0"),
            (lambda: self.d_embed is None or 0 < self.d_embed <= MAX_SIZES["d_model"],
             f"d_embed must be positive and at most {MAX_SIZES['d_model']:,}, got {self.d_embed}"),
            (lambda: self.n_params <= MAX_PARAMS, lambda: self._too_many_params()),
        ] + self._decoder_checks()
        for ok, message in checks:
            if not ok():
                raise ValueError(message() if callable(message) else message)

    def _decoder_checks(self) -> list:
        """The checks of the fields the newer decoder families use (rotary variants, windows,
        soft-capping); each is off by default."""
        optional = {"attn_scale": self.attn_scale, "attn_softcap": self.attn_softcap,
                    "final_softcap": self.final_softcap, "rope_local_theta": self.rope_local_theta}
        bad = [f"{k}={v!r}" for k, v in optional.items()
               if v is not None and not (_is_number(v) and v > 0)]
        types = self.layer_types
        return [
            (lambda: self.rope_scaling in ROPE_SCALINGS,
             f"rope_scaling must be one of {ROPE_SCALINGS}, got {self.rope_scaling!r}"),
            (lambda: not bad, "must be positive numbers or null: " + ", ".join(bad)),
            (lambda: all(_is_number(v) and v > 0 for v in (
                self.rope_factor, self.rope_low_freq_factor, self.rope_high_freq_factor))
             and _is_int(self.rope_original_ctx) and self.rope_original_ctx > 0
             and self.rope_high_freq_factor != self.rope_low_freq_factor,
             "rope_factor, rope_low_freq_factor, rope_high_freq_factor (unequal) and "
             "rope_original_ctx must be positive numbers"),
            (lambda: self.rotary_dim is None or (_is_int(self.rotary_dim) and 0 < self.rotary_dim
                                                 <= self.d_head and self.rotary_dim % 2 == 0),
             f"rotary_dim must be an even number in [2, d_head], got {self.rotary_dim!r}"),
            (lambda: self.sliding_window is None or (_is_int(self.sliding_window)
                                                     and self.sliding_window > 0),
             f"sliding_window must be a positive integer, got {self.sliding_window!r}"),
            (lambda: types is None or (isinstance(types, tuple) and len(types) == self.n_layers
                                       and all(t in LAYER_TYPES for t in types)),
             f"layer_types must list {LAYER_TYPES[0]!r} or {LAYER_TYPES[1]!r} for each of the "
             f"{self.n_layers} layers"),
            (lambda: types is None or "sliding" not in types or self.sliding_window is not None,
             "sliding layers need a sliding_window"),
            (lambda: self.attn_out_bias is None or isinstance(self.attn_out_bias, bool),
             "attn_out_bias must be true, false or null"),
            (lambda: self.block not in ("parallel", "sandwich") or not self.attn_only,
             f"a {self.block} block needs an MLP (attn_only must be false)"),
        ]

    def layer_type(self, layer: int) -> str:
        """"full" or "sliding": which keys layer `layer`'s queries may see."""
        return "full" if self.layer_types is None else self.layer_types[layer]

    @property
    def has_out_bias(self) -> bool:
        return self.attn_bias if self.attn_out_bias is None else self.attn_out_bias

    @property
    def n_params(self) -> int:
        """About how many numbers the model holds: embeddings, every block, the heads.
        Checked against MAX_PARAMS before any tensor is allocated."""
        return sum(self._param_parts().values())

    def _param_parts(self) -> dict[str, int]:
        d, dh, v = self.d_model, self.d_head, self.d_vocab
        attn = 2 * (self.n_heads + self.n_kv_heads) * d * dh  # W_Q, W_O; W_K, W_V
        mlp = (3 if self.gated_mlp else 2) * d * self.d_mlp
        n_pos = 0 if self.positions in ("rotary", "relative") else self.n_ctx + self.position_offset
        return {
            f"token embedding and LM head (d_vocab={v:,} x d_model={d:,})":
                v * d * (2 if self.has_lm_head else 1) + self.n_token_types * d,
            f"positions (n_ctx={self.n_ctx:,} x d_model={d:,})": n_pos * d,
            f"blocks (n_layers={self.n_layers:,}, d_model={d:,}, d_mlp={self.d_mlp:,})":
                self.n_layers * (attn + mlp + 4 * d) + (d * d if self.has_pooler else 0),
        }

    def _too_many_params(self) -> str:
        parts = self._param_parts()
        biggest = max(parts, key=parts.get)
        return (f"the config describes about {self.n_params:.2g} parameters, most of them in the "
                f"{biggest}; the limit is {MAX_PARAMS:,} (MAX_PARAMS in model/config.py)")

    def _fill_in(self) -> None:
        """n_kv_heads and d_head left as None take their usual values (frozen: set once here)."""
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        if isinstance(self.layer_types, list):  # read back from JSON
            object.__setattr__(self, "layer_types", tuple(self.layer_types))
        divisible = _is_int(self.d_model) and _is_int(self.n_heads) and self.n_heads > 0 and \
            self.d_model % self.n_heads == 0
        if self.d_head is None and divisible:
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)

    @property
    def is_decoder(self) -> bool:
        return self.causal

    def to_dict(self) -> dict:
        """The fields, with n_kv_heads and d_head left as None where they take their usual
        values, so that a saved config edited by hand keeps them derived."""
        data = dataclasses.asdict(self)
        if self.n_kv_heads == self.n_heads:
            data["n_kv_heads"] = None
        if self.d_model % self.n_heads == 0 and self.d_head == self.d_model // self.n_heads:
            data["d_head"] = None
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "TransformerConfig":
        if not isinstance(data, dict):
            raise TypeError(f"a config must be an object of fields, got {type(data).__name__}")
        data = {LEGACY_NAMES.get(k, k): v for k, v in data.items()}
        if data.get("family") in LEGACY_FAMILIES:
            data["family"] = LEGACY_FAMILIES[data["family"]]
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config fields: {unknown}")
        return cls(**data)
