"""config.json -> TransformerConfig for the decoder families beyond GPT-2: Llama and the models
built like it (Mistral, Qwen2, Qwen3, Gemma, Gemma 2, Gemma 3), GPT-NeoX (Pythia), Phi-3, OPT
and GPT-Neo.

Each builder reads both the config.json that transformers 5 writes (`rope_parameters`,
`layer_types`) and the older one most hub checkpoints still carry (`rope_theta`,
`rope_scaling`, `rotary_pct`, `sliding_window_pattern`, ...). What the engine cannot compute
exactly as Hugging Face does (YaRN or LongRoPE scaling, OPT-350m's projections) is refused by
name rather than run approximately.
"""

from __future__ import annotations

import dataclasses

from .config import TransformerConfig
from .errors import ModelLoadError

def _get(hf: dict, *names, default=None):
    """The first of `names` that config.json sets (not null)."""
    return next((hf[n] for n in names if hf.get(n) is not None), default)


HF_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding",
                  "global": "full", "local": "sliding"}


def _rope_params(hf: dict) -> dict:
    """The rotary parameters of full-attention layers: transformers 5's rope_parameters (flat,
    or one entry per layer type), else the older rope_scaling plus rope_theta."""
    params = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise ModelLoadError("config.json: rope_parameters (or rope_scaling) must be an object, "
                             f"got {params!r:.40}")
    if isinstance(params.get("full_attention"), dict):
        params = params["full_attention"]
    return params


def _number(params: dict, name: str) -> float:
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelLoadError(f"config.json: the rotary scaling's {name} must be a number, "
                             f"got {value!r:.40}")
    return float(value)


def rope_fields(hf: dict, d_head: int | None, theta_default: float = 10000.0) -> dict:
    """rope_theta, the scaling and the rotated share of each head, as TransformerConfig fields."""
    params = _rope_params(hf)
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in ("default", None, "linear", "llama3"):
        raise ModelLoadError(f"rotary scaling '{rope_type}' is not supported yet (plain RoPE, "
                             "linear and Llama 3's scaling are)")
    theta = params.get("rope_theta", _get(hf, "rope_theta", "rotary_emb_base",
                                          default=theta_default))
    fields = {"rope_theta": float(theta)}
    if rope_type in ("linear", "llama3"):
        fields.update(rope_scaling=rope_type, rope_factor=_number(params, "factor"))
    if rope_type == "llama3":
        fields.update(rope_low_freq_factor=_number(params, "low_freq_factor"),
                      rope_high_freq_factor=_number(params, "high_freq_factor"),
                      rope_original_ctx=params["original_max_position_embeddings"])
    share = params.get("partial_rotary_factor", _get(hf, "partial_rotary_factor", "rotary_pct",
                                                     default=1.0))
    if share != 1.0 and d_head is not None:
        fields["rotary_dim"] = int(d_head * share)  # int(), as transformers rounds it
    return fields


def _local_theta(hf: dict) -> float | None:
    """Gemma 3's sliding layers rotate with their own base (rope_local_base_freq), unscaled."""
    nested = hf.get("rope_parameters") or {}
    local = nested.get("sliding_attention") if isinstance(nested, dict) else None
    if isinstance(local, dict):
        if local.get("rope_type", "default") != "default":
            raise ModelLoadError("rotary scaling on sliding-window layers is not supported yet")
        return float(local.get("rope_theta", 10000.0))
    return float(hf.get("rope_local_base_freq", 10000.0))


def layer_types(hf: dict, n_layers: int, every: int | None = None) -> tuple[str, ...] | None:
    """Which layers see only a sliding window: config.json's layer_types when it lists them,
    else every layer but each `every`-th one (Gemma 2: every=2, Gemma 3: every=6), else all
    layers when a window is set (Mistral, Phi-3); None when no layer slides."""
    listed = hf.get("layer_types")
    if isinstance(listed, list) and listed:
        unknown = sorted({t for t in listed if t not in HF_LAYER_TYPES})
        if unknown or len(listed) != n_layers:
            raise ModelLoadError(f"config.json: layer_types must name one of "
                                 f"{sorted(HF_LAYER_TYPES)} for each of the {n_layers} layers")
        types = tuple(HF_LAYER_TYPES[t] for t in listed)
    elif hf.get("sliding_window") is None:
        return None
    elif every is not None:
        types = tuple("full" if (i + 1) % every == 0 else "sliding" for i in range(n_layers))
    else:
        types = ("sliding",) * n_layers
    return types if "sliding" in types else None


def _window(hf: dict, types) -> dict:
    if types is None:
        return {}
    if hf.get("sliding_window") is None:
        raise ModelLoadError("config.json lists sliding-window layers but no sliding_window")
    return {"sliding_window": hf["sliding_window"], "layer_types": types}


GEMMA = ("gemma", "gemma2", "gemma3_text")


def _qwen2_types(hf: dict, n_layers: int):
    """Qwen2 and Qwen3 slide only with use_sliding_window, from layer max_window_layers on."""
    if not hf.get("use_sliding_window") or hf.get("sliding_window") is None:
        return None
    if hf.get("layer_types"):
        return layer_types(hf, n_layers)
    first = _get(hf, "max_window_layers", default=n_layers)
    types = tuple("sliding" if i >= first else "full" for i in range(n_layers))
    return types if "sliding" in types else None


def llama_like_config(hf: dict) -> TransformerConfig:
    """Llama, Mistral, Qwen2, Qwen3, Gemma, Gemma 2 and Gemma 3 (text): one converter, their
    differences are fields: biases, q/k norms, norms around each part, caps and windows."""
    kind = hf.get("model_type")
    n_heads, n_layers, d_model = (hf["num_attention_heads"], hf["num_hidden_layers"],
                                  hf["hidden_size"])
    d_head = _get(hf, "head_dim", default=d_model // n_heads if n_heads else None)
    gemma = kind in GEMMA
    if kind in ("qwen2", "qwen3"):
        types = _qwen2_types(hf, n_layers)
    else:
        types = layer_types(hf, n_layers, {"gemma2": 2, "gemma3_text": _get(
            hf, "sliding_window_pattern", "_sliding_window_pattern", default=6)}.get(kind))
    if kind == "gemma":
        types = None  # Gemma 1 has no sliding window
    extra = dict(rope_fields(hf, d_head), **_window(hf, types))
    if kind == "gemma3_text":
        extra["rope_local_theta"] = _local_theta(hf)
    if gemma:
        extra.update(norm="gemma_rmsnorm", embed_scale=True,
                     block="pre_ln" if kind == "gemma" else "sandwich")
        if kind != "gemma":
            extra.update(attn_scale=float(_get(hf, "query_pre_attn_scalar",
                                               default=d_head)) ** -0.5,
                         attn_softcap=hf.get("attn_logit_softcapping"),
                         final_softcap=hf.get("final_logit_softcapping"))
    attn_bias = bool(hf.get("attention_bias", kind == "qwen2"))
    return TransformerConfig(
        family="llama", d_model=d_model, n_heads=n_heads, n_layers=n_layers,
        n_ctx=hf.get("max_position_embeddings", 2048), d_vocab=hf["vocab_size"],
        d_mlp=hf["intermediate_size"], n_kv_heads=_get(hf, "num_key_value_heads",
                                                       default=n_heads),
        d_head=hf.get("head_dim"), positions="rotary", norm=extra.pop("norm", "rmsnorm"),
        block=extra.pop("block", "pre_ln"), gated_mlp=True,
        act=_gemma_activation(hf) if gemma else _activation(hf, "silu"),
        causal=True, norm_eps=hf.get("rms_norm_eps", 1e-6), attn_bias=attn_bias,
        attn_out_bias=attn_bias and kind != "qwen2",  # Qwen2: biases on q, k, v only
        mlp_bias=bool(hf.get("mlp_bias", False)), qk_norm=kind in ("qwen3", "gemma3_text"),
        has_lm_head=True, tie_embeddings=bool(hf.get("tie_word_embeddings", gemma)), **extra,
    )


# transformers' activation names -> ours (model/config.py ACTIVATIONS)
ACTIVATION_NAMES = {"gelu": "gelu", "gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new",
                    "gelu_fast": None, "relu": "relu", "silu": "silu", "swish": "silu"}


def _activation(hf: dict, default: str) -> str:
    name = _get(hf, "hidden_activation", "hidden_act", "activation_function", default=default)
    if ACTIVATION_NAMES.get(name) is None:
        known = ", ".join(k for k, v in ACTIVATION_NAMES.items() if v)
        raise ModelLoadError(f"the activation {name!r} is not supported yet (supported: {known})")
    return ACTIVATION_NAMES[name]


def _gemma_activation(hf: dict) -> str:
    """Gemma reads only hidden_activation (tanh GELU unless set); its hidden_act is ignored."""
    return _activation({"hidden_activation": hf.get("hidden_activation") or
                        "gelu_pytorch_tanh"}, "gelu_pytorch_tanh")


def neox_config(hf: dict) -> TransformerConfig:
    """GPT-NeoX and Pythia: LayerNorm, partial rotary, attention and MLP side by side."""
    d_model, n_heads = hf["hidden_size"], hf["num_attention_heads"]
    d_head = d_model // n_heads if n_heads and d_model % n_heads == 0 else None
    return TransformerConfig(
        family="neox", d_model=d_model, n_heads=n_heads, n_layers=hf["num_hidden_layers"],
        n_ctx=hf.get("max_position_embeddings", 2048), d_vocab=hf["vocab_size"],
        d_mlp=hf["intermediate_size"], positions="rotary", norm="layernorm",
        block="parallel" if hf.get("use_parallel_residual", True) else "pre_ln",
        act=_activation(hf, "gelu"), norm_eps=hf.get("layer_norm_eps", 1e-5),
        attn_bias=bool(hf.get("attention_bias", True)), has_lm_head=True,
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)), **rope_fields(hf, d_head),
    )


def phi3_config(hf: dict) -> TransformerConfig:
    """Phi-3: Llama's layout with q, k, v in one matrix and the MLP's gate and up in another."""
    d_model, n_heads = hf["hidden_size"], hf["num_attention_heads"]
    d_head = d_model // n_heads if n_heads and d_model % n_heads == 0 else None
    n_layers = hf["num_hidden_layers"]
    return TransformerConfig(
        family="phi3", d_model=d_model, n_heads=n_heads, n_layers=n_layers,
        n_ctx=hf.get("max_position_embeddings", 4096), d_vocab=hf["vocab_size"],
        d_mlp=hf["intermediate_size"], n_kv_heads=_get(hf, "num_key_value_heads",
                                                       default=n_heads),
        positions="rotary", norm="rmsnorm", act=_activation(hf, "silu"), gated_mlp=True,
        norm_eps=hf.get("rms_norm_eps", 1e-5), attn_bias=False, mlp_bias=False,
        has_lm_head=True, tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
        **rope_fields(hf, d_head), **_window(hf, layer_types(hf, n_layers)),
    )


def opt_config(hf: dict) -> TransformerConfig:
    """OPT: GPT-2's layout with nn.Linear weights, ReLU and positions numbered from 2."""
    d_model = hf["hidden_size"]
    if _get(hf, "word_embed_proj_dim", default=d_model) != d_model:
        raise ModelLoadError("OPT with word_embed_proj_dim != hidden_size (OPT-350m's "
                             "projections in and out) is not supported yet")
    if not hf.get("do_layer_norm_before", True) or hf.get("_remove_final_layer_norm"):
        raise ModelLoadError("OPT with its norms after each part (do_layer_norm_before false) "
                             "is not supported yet")
    if not hf.get("layer_norm_elementwise_affine", True):
        raise ModelLoadError("OPT without norm weights is not supported yet")
    bias = bool(hf.get("enable_bias", True))
    return TransformerConfig(
        family="opt", d_model=d_model, n_heads=hf["num_attention_heads"],
        n_layers=hf["num_hidden_layers"], n_ctx=hf.get("max_position_embeddings", 2048),
        d_vocab=hf["vocab_size"], d_mlp=hf["ffn_dim"], positions="learned",
        norm="layernorm", act=_activation(hf, "relu"), position_offset=2,
        pad_token_id=_get(hf, "pad_token_id", default=1), attn_bias=bias, mlp_bias=bias,
        has_lm_head=True, tie_embeddings=bool(hf.get("tie_word_embeddings", True)),
    )


def gpt_neo_config(hf: dict) -> TransformerConfig:
    """GPT-Neo (TinyStories): GPT-2's layout, unscaled attention, local layers with a window."""
    d_model, n_layers = hf["hidden_size"], _get(hf, "num_layers", "num_hidden_layers")
    layers = hf.get("attention_layers")
    if not layers:  # attention_types: [[["global", "local"], 12]] -> the pattern repeated
        layers = [kind for pattern, times in hf.get("attention_types", []) for _ in range(times)
                  for kind in pattern]
    types = layer_types({"layer_types": layers}, n_layers) if layers else None
    return TransformerConfig(
        family="gpt_neo", d_model=d_model, n_heads=hf["num_heads"], n_layers=n_layers,
        n_ctx=hf.get("max_position_embeddings", 2048), d_vocab=hf["vocab_size"],
        d_mlp=_get(hf, "intermediate_size", default=4 * d_model), positions="learned",
        norm="layernorm", act=_activation(hf, "gelu_new"),
        norm_eps=hf.get("layer_norm_epsilon", 1e-5), attn_bias=False, attn_out_bias=True,
        attn_scale=1.0, has_lm_head=True, tie_embeddings=bool(hf.get("tie_word_embeddings", True)),
        **_window({"sliding_window": hf.get("window_size", 256)}, types),
    )


# Gemma3TextConfig's defaults: the text_config of a multimodal Gemma 3 (4B and up) lists only
# what differs from them, and transformers fills in the rest.
GEMMA3_TEXT_DEFAULTS = dict(
    vocab_size=262208, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
    num_attention_heads=8, num_key_value_heads=4, head_dim=256, rms_norm_eps=1e-6,
    max_position_embeddings=131072, rope_theta=1_000_000.0, rope_local_base_freq=10000.0,
    query_pre_attn_scalar=256, sliding_window=4096, sliding_window_pattern=6,
    hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)


def gemma3_config(hf: dict) -> TransformerConfig:
    """Gemma 3: the text model alone (gemma3_text), or the language model of a multimodal
    checkpoint (gemma3, with text_config; the vision tower is not loaded)."""
    text = hf.get("text_config", hf) if hf.get("model_type") == "gemma3" else hf
    if not isinstance(text, dict):
        raise ModelLoadError("config.json: a Gemma 3 text_config must be an object")
    merged = {**GEMMA3_TEXT_DEFAULTS, **{k: v for k, v in text.items() if v is not None},
              "model_type": "gemma3_text"}
    for name in ("final_logit_softcapping", "attn_logit_softcapping", "rope_scaling"):
        merged[name] = text.get(name)  # null here means "none", not "the default"
    cfg = llama_like_config(merged)
    # Hugging Face's Gemma 3 keeps attn_logit_softcapping in its config but never passes it to
    # its attention (read in transformers 5.24's modeling_gemma3.py; the parity tests compare
    # with the installed version): the reference scores are not capped.
    changes = {"attn_softcap": None}
    if merged.get("use_bidirectional_attention"):  # EmbeddingGemma (Gemma3TextModel)
        # Every key both ways; a sliding layer sees keys fewer than window // 2 + 1 positions
        # away on either side (Gemma3TextConfig halves the window it reads). An embedding
        # model: its vectors are its output, no head predicts tokens.
        changes.update(causal=False, has_lm_head=False, final_softcap=None)
        if cfg.sliding_window is not None:
            changes["sliding_window"] = cfg.sliding_window // 2 + 1
    return dataclasses.replace(cfg, **changes)


DECODER_BUILDERS = {
    "llama": llama_like_config, "mistral": llama_like_config, "qwen2": llama_like_config,
    "qwen3": llama_like_config, "gemma": llama_like_config, "gemma2": llama_like_config,
    "gemma3_text": gemma3_config, "gemma3": gemma3_config, "gpt_neox": neox_config,
    "phi3": phi3_config, "opt": opt_config, "gpt_neo": gpt_neo_config,
}
