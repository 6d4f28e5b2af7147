"""Hugging Face encoder-decoders: BART, Marian (opus-mt) and T5, as config builders and pure
weight converters. The model they fill is model/seq2seq_stacks.py's Seq2SeqTransformer.

- BART: post-LN encoder and decoder, learned positions numbered from 2, a LayerNorm right after
  the embeddings, a bias on the logits (final_logits_bias).
- Marian: BART's layers with fixed sinusoidal positions (sines in the first half of each
  vector, cosines in the second) and no norm after the embeddings.
- T5: pre-norm stacks with RMSNorm (no mean subtracted, no bias), no position embeddings at
  all: each stack adds a learned bias per head and per distance bucket to every score (computed
  once per stack, shared by its layers), and q·k is not scaled. T5 v1.1 and Flan-T5 use a
  gated-GELU MLP.

A builder turns config.json into (encoder config, decoder config, Seq2SeqSpec); a converter
turns the checkpoint's state dict into ours. Bad fields raise ValueError or KeyError, which
the loader turns into a message naming them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .config import MAX_SIZES, TransformerConfig
from .convert import StateDict, linear_out_to_heads, linear_to_heads

MAX_BUCKETS = 1 << 16  # T5 uses 32; a bound so a hostile config.json cannot ask for gigabytes
# config.json's activation names -> ours (config.ACTIVATIONS)
HF_ACTS = {"gelu": "gelu", "gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new",
           "relu": "relu", "silu": "silu", "swish": "silu"}


@dataclass(frozen=True)
class Seq2SeqSpec:
    """What an encoder-decoder family adds to its two TransformerConfigs."""

    family: str  # "bart", "marian" or "t5"
    positions: str  # "learned" (BART), "sinusoidal" (Marian) or "relative" (T5)
    start_id: int  # the decoder's first input token (decoder_start_token_id)
    eos_id: int
    position_offset: int = 0  # BART numbers positions from 2
    embed_scale: float = 1.0  # token embedding * this (sqrt(d_model) with scale_embedding)
    embed_norm: bool = False  # BART: LayerNorm after the embedding sum
    logits_bias: bool = False  # BART, Marian: final_logits_bias added to the logits
    out_scale: float = 1.0  # T5 (tied head): the decoder's output * d_model ** -0.5
    rel_buckets: int = 32  # T5: distance buckets of the relative position bias
    rel_max_distance: int = 128  # T5: distances from here on share the last bucket


def _act(name) -> str:
    if name not in HF_ACTS:
        raise ValueError(f"activation {name!r} is not supported (known: {sorted(HF_ACTS)})")
    return HF_ACTS[name]


def _int(hf: dict, name: str, default=None) -> int:
    value = hf.get(name, default)
    if isinstance(value, list) and value:  # eos_token_id may be a list
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r:.40}")
    return value


def bart_like_config(hf: dict):
    """BartConfig or MarianConfig -> (encoder, decoder, spec)."""
    marian = hf.get("model_type") == "marian"
    if hf.get("normalize_before") or hf.get("add_final_layer_norm"):
        raise ValueError("pre-norm BART variants (normalize_before, add_final_layer_norm) are "
                         "not supported")
    vocab = hf["vocab_size"]
    if hf.get("decoder_vocab_size") not in (None, vocab):
        raise ValueError("a Marian model with its own decoder vocabulary is not supported")
    d = hf["d_model"]
    common = dict(family="bart", d_model=d, n_ctx=hf.get("max_position_embeddings", 1024),
                  d_vocab=vocab, positions="sinusoidal" if marian else "learned",
                  norm="layernorm", block="post_ln", act=_act(hf.get("activation_function",
                                                                     "gelu")), norm_eps=1e-5)
    enc = TransformerConfig(n_heads=hf["encoder_attention_heads"],
                            n_layers=hf["encoder_layers"], d_mlp=hf["encoder_ffn_dim"],
                            causal=False, **common)
    dec = TransformerConfig(n_heads=hf["decoder_attention_heads"],
                            n_layers=hf["decoder_layers"], d_mlp=hf["decoder_ffn_dim"],
                            causal=True, has_lm_head=True, tie_embeddings=True, **common)
    pad = _int(hf, "pad_token_id", 1)
    spec = Seq2SeqSpec(
        family="marian" if marian else "bart", positions=common["positions"],
        start_id=_int(hf, "decoder_start_token_id", pad if marian else 2),
        eos_id=_int(hf, "eos_token_id", 2), position_offset=0 if marian else 2,
        embed_scale=math.sqrt(d) if hf.get("scale_embedding", marian) else 1.0,
        embed_norm=not marian, logits_bias=True)
    return enc, dec, spec


def t5_config(hf: dict):
    """T5Config or MT5Config (t5, t5 v1.1, Flan-T5, mT5) -> (encoder, decoder, spec)."""
    proj = hf.get("feed_forward_proj", "relu")
    parts = proj.split("-") if isinstance(proj, str) else []
    if not parts or len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise ValueError(f"feed_forward_proj {proj!r} is not 'gated-ACT' or 'ACT'")
    act = "gelu_new" if proj == "gated-gelu" else _act(parts[-1])
    d = hf["d_model"]
    common = dict(family="t5", d_model=d, n_heads=hf["num_heads"], d_head=hf["d_kv"],
                  n_ctx=hf.get("n_positions", 512), d_vocab=hf["vocab_size"],
                  d_mlp=hf["d_ff"], positions="relative", norm="rmsnorm", block="pre_ln",
                  act=act, gated_mlp=len(parts) == 2, norm_eps=hf.get("layer_norm_epsilon", 1e-6),
                  attn_bias=False, mlp_bias=False, attn_scale=1.0)
    enc = TransformerConfig(n_layers=hf["num_layers"], causal=False, **common)
    dec = TransformerConfig(n_layers=hf.get("num_decoder_layers") or hf["num_layers"],
                            causal=True, has_lm_head=True, **common)
    # transformers 5 writes scale_decoder_outputs; older files say tie_word_embeddings (T5 v1.1
    # and Flan-T5: false, an untied head and no scaling)
    # and mT5 never scales (transformers 5's MT5 has no such step)
    scale = hf.get("scale_decoder_outputs", hf.get("tie_word_embeddings", True) is not False
                   and hf.get("model_type") != "mt5")
    pad = _int(hf, "pad_token_id", 0)
    spec = Seq2SeqSpec(
        family="t5", positions="relative", start_id=_int(hf, "decoder_start_token_id", pad),
        eos_id=_int(hf, "eos_token_id", 1), out_scale=d ** -0.5 if scale else 1.0,
        rel_buckets=_int(hf, "relative_attention_num_buckets", 32),
        rel_max_distance=_int(hf, "relative_attention_max_distance", 128))
    if not (4 <= spec.rel_buckets <= MAX_BUCKETS
            and spec.rel_buckets // 4 < spec.rel_max_distance <= MAX_SIZES["n_ctx"]):
        raise ValueError(f"relative_attention_num_buckets must be in [4, {MAX_BUCKETS:,}] and "
                         "relative_attention_max_distance larger than a quarter of it (and at "
                         f"most {MAX_SIZES['n_ctx']:,})")
    return enc, dec, spec


# mT5 is T5 v1.1 (gated-GELU, untied head) with a bigger vocabulary
SEQ2SEQ_BUILDERS = {"bart": bart_like_config, "marian": bart_like_config, "t5": t5_config,
                    "mt5": t5_config}


# ------------------------------------------------------------------------------ weights
def _heads(out: StateDict, ours: str, sd: StateDict, theirs: str, names, h: int,
           bias: bool) -> None:
    """Q, K, V and O of one attention: names = the checkpoint's (q, k, v, o) sub-names."""
    for letter, name in zip("QKV", names[:3]):
        out[f"{ours}.W_{letter}"] = linear_to_heads(sd[f"{theirs}.{name}.weight"], h)
        if bias:
            out[f"{ours}.b_{letter}"] = sd[f"{theirs}.{name}.bias"].reshape(h, -1)
    out[f"{ours}.W_O"] = linear_out_to_heads(sd[f"{theirs}.{names[3]}.weight"], h)
    if bias:
        out[f"{ours}.b_O"] = sd[f"{theirs}.{names[3]}.bias"]


def _pair(out: StateDict, ours: str, sd: StateDict, theirs: str, bias: bool = True) -> None:
    out[ours + ".weight"] = sd[theirs + ".weight"]
    if bias:
        out[ours + ".bias"] = sd[theirs + ".bias"]


def _base(hf: StateDict, anchor: str) -> StateDict:
    """Drop a "model." wrapper (BartForConditionalGeneration) but keep lm_head and the bias."""
    prefix = next((k[: -len(anchor)] for k in hf if k.endswith(anchor)), None)
    if prefix is None:
        raise KeyError(anchor)
    return {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in hf.items()}


def convert_bart(hf: StateDict, enc: TransformerConfig, dec: TransformerConfig,
                 spec: Seq2SeqSpec) -> StateDict:
    sd = _base(hf, "shared.weight") if any(k.endswith("shared.weight") for k in hf) else \
        _base(hf, "encoder.embed_tokens.weight")
    shared = sd.get("shared.weight", sd.get("encoder.embed_tokens.weight"))
    out: StateDict = {"embed.W_E.weight": shared, "decoder.embed.W_E.weight":
                      sd.get("decoder.embed_tokens.weight", shared)}
    attn = ("q_proj", "k_proj", "v_proj", "out_proj")
    for side, cfg, ours in (("encoder", enc, ""), ("decoder", dec, "decoder.")):
        if spec.positions == "learned":
            out[ours + "embed.W_pos.weight"] = sd[f"{side}.embed_positions.weight"]
        if spec.embed_norm:
            _pair(out, ours + "embed.ln", sd, f"{side}.layernorm_embedding")
        for i in range(cfg.n_layers):
            p, o = f"{side}.layers.{i}.", f"{ours}blocks.{i}."
            _heads(out, o + "attn", sd, p + "self_attn", attn, cfg.n_heads, True)
            _pair(out, o + "ln1", sd, p + "self_attn_layer_norm")
            _pair(out, o + "mlp.W_in", sd, p + "fc1")
            _pair(out, o + "mlp.W_out", sd, p + "fc2")
            _pair(out, o + "ln2", sd, p + "final_layer_norm")
            if side == "decoder":
                _heads(out, o + "cross_attn", sd, p + "encoder_attn", attn, cfg.n_heads, True)
                _pair(out, o + "ln_cross", sd, p + "encoder_attn_layer_norm")
    out["decoder.unembed.weight"] = sd.get("lm_head.weight", out["decoder.embed.W_E.weight"])
    out["decoder.b_U"] = sd.get("final_logits_bias", torch.zeros(1, dec.d_vocab)).reshape(-1)
    return out


def _t5_mlp(out: StateDict, o: str, sd: StateDict, p: str, gated: bool) -> None:
    if gated:
        out[o + "mlp.W_gate.weight"] = sd[p + "wi_0.weight"]
        out[o + "mlp.W_in.weight"] = sd[p + "wi_1.weight"]
    else:
        out[o + "mlp.W_in.weight"] = sd[p + "wi.weight"]
    out[o + "mlp.W_out.weight"] = sd[p + "wo.weight"]


def convert_t5(hf: StateDict, enc: TransformerConfig, dec: TransformerConfig,
               spec: Seq2SeqSpec) -> StateDict:
    sd = hf
    shared = sd.get("shared.weight", sd.get("encoder.embed_tokens.weight"))
    if shared is None:
        raise KeyError("shared.weight")
    out: StateDict = {"embed.W_E.weight": sd.get("encoder.embed_tokens.weight", shared),
                      "decoder.embed.W_E.weight": sd.get("decoder.embed_tokens.weight", shared)}
    attn = ("q", "k", "v", "o")
    for side, cfg, ours in (("encoder", enc, ""), ("decoder", dec, "decoder.")):
        out[ours + "rel_bias.W_bias.weight"] = \
            sd[f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        out[ours + "ln_final.weight"] = sd[f"{side}.final_layer_norm.weight"]
        for i in range(cfg.n_layers):
            p, o = f"{side}.block.{i}.layer.", f"{ours}blocks.{i}."
            _heads(out, o + "attn", sd, p + "0.SelfAttention", attn, cfg.n_heads, False)
            out[o + "ln1.weight"] = sd[p + "0.layer_norm.weight"]
            ff = 1 if side == "encoder" else 2
            if side == "decoder":
                _heads(out, o + "cross_attn", sd, p + "1.EncDecAttention", attn, cfg.n_heads,
                       False)
                out[o + "ln_cross.weight"] = sd[p + "1.layer_norm.weight"]
            _t5_mlp(out, o, sd, f"{p}{ff}.DenseReluDense.", cfg.gated_mlp)
            out[o + "ln2.weight"] = sd[f"{p}{ff}.layer_norm.weight"]
    out["decoder.unembed.weight"] = sd.get("lm_head.weight", shared)
    return out


SEQ2SEQ_CONVERTERS = {"bart": convert_bart, "marian": convert_bart, "t5": convert_t5,
                      "mt5": convert_t5}
