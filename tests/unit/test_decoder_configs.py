"""config.json -> TransformerConfig for the decoder families, on the config.json files real
hub checkpoints carry (written before transformers 5: rope_theta, rope_scaling, rotary_pct,
sliding_window_pattern, attention_types), and the variants refused by name."""

from __future__ import annotations

import pytest

from model.registry import ModelLoadError, config_from_hf

PYTHIA_70M = {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8,
              "num_hidden_layers": 6, "intermediate_size": 2048, "hidden_act": "gelu",
              "layer_norm_eps": 1e-5, "max_position_embeddings": 2048, "rotary_emb_base": 10000,
              "rotary_pct": 0.25, "tie_word_embeddings": False, "use_parallel_residual": True,
              "vocab_size": 50304}
LLAMA_32_1B = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32,
               "num_key_value_heads": 8, "head_dim": 64, "num_hidden_layers": 16,
               "intermediate_size": 8192, "max_position_embeddings": 131072,
               "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": True,
               "vocab_size": 128256, "rope_scaling": {
                   "factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
GEMMA2_2B = {"model_type": "gemma2", "hidden_size": 2304, "num_attention_heads": 8,
             "num_key_value_heads": 4, "head_dim": 256, "num_hidden_layers": 26,
             "intermediate_size": 9216, "vocab_size": 256000, "hidden_act": "gelu_pytorch_tanh",
             "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
             "sliding_window": 4096, "attn_logit_softcapping": 50.0,
             "final_logit_softcapping": 30.0, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
             "max_position_embeddings": 8192}
GEMMA3_1B = {"model_type": "gemma3_text", "hidden_size": 1152, "num_attention_heads": 4,
             "num_key_value_heads": 1, "head_dim": 256, "num_hidden_layers": 26,
             "intermediate_size": 6912, "vocab_size": 262144, "query_pre_attn_scalar": 256,
             "sliding_window": 512, "sliding_window_pattern": 6, "rope_theta": 1000000.0,
             "rope_local_base_freq": 10000.0, "rope_scaling": None,
             "final_logit_softcapping": None, "attn_logit_softcapping": None,
             "max_position_embeddings": 32768, "rms_norm_eps": 1e-6}
TINYSTORIES_33M = {"model_type": "gpt_neo", "hidden_size": 768, "num_heads": 16, "num_layers": 4,
                   "attention_types": [[["global", "local"], 2]], "window_size": 256,
                   "intermediate_size": None, "max_position_embeddings": 2048,
                   "vocab_size": 50257, "activation_function": "gelu_new"}
QWEN25_05B = {"model_type": "qwen2", "hidden_size": 896, "num_attention_heads": 14,
              "num_key_value_heads": 2, "num_hidden_layers": 24, "intermediate_size": 4864,
              "vocab_size": 151936, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
              "sliding_window": 32768, "use_sliding_window": False, "max_window_layers": 21,
              "tie_word_embeddings": True, "rms_norm_eps": 1e-6, "hidden_act": "silu"}
OPT_125M = {"model_type": "opt", "hidden_size": 768, "num_attention_heads": 12,
            "num_hidden_layers": 12, "ffn_dim": 3072, "max_position_embeddings": 2048,
            "do_layer_norm_before": True, "word_embed_proj_dim": 768, "pad_token_id": 1,
            "activation_function": "relu", "vocab_size": 50272}
PHI3_MINI = {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
             "num_key_value_heads": 32, "num_hidden_layers": 32, "intermediate_size": 8192,
             "vocab_size": 32064, "max_position_embeddings": 4096, "sliding_window": 2047,
             "rope_scaling": None, "rope_theta": 10000.0, "rms_norm_eps": 1e-5}


def test_pythia_rotates_a_quarter_of_each_head_in_parallel_blocks():
    cfg = config_from_hf(PYTHIA_70M)
    assert (cfg.family, cfg.block, cfg.d_head, cfg.rotary_dim) == ("neox", "parallel", 64, 16)
    assert cfg.act == "gelu" and cfg.attn_bias and not cfg.tie_embeddings


def test_llama_3_rope_scaling_from_its_old_config():
    cfg = config_from_hf(LLAMA_32_1B)
    assert (cfg.rope_scaling, cfg.rope_factor, cfg.rope_original_ctx) == ("llama3", 32.0, 8192)
    assert cfg.rope_theta == 500000.0 and cfg.tie_embeddings and cfg.layer_types is None


def test_gemma2_alternates_windows_and_caps():
    cfg = config_from_hf(GEMMA2_2B)
    assert cfg.layer_types[:4] == ("sliding", "full", "sliding", "full")
    assert (cfg.sliding_window, cfg.attn_softcap, cfg.final_softcap) == (4096, 50.0, 30.0)
    assert cfg.attn_scale == pytest.approx(1 / 16) and cfg.norm == "gemma_rmsnorm"
    assert cfg.block == "sandwich" and cfg.embed_scale and cfg.tie_embeddings


def test_gemma3_has_five_local_layers_to_one_global_and_two_rotary_bases():
    cfg = config_from_hf(GEMMA3_1B)
    assert cfg.layer_types[:6] == ("sliding",) * 5 + ("full",)
    assert (cfg.rope_theta, cfg.rope_local_theta, cfg.qk_norm) == (1e6, 1e4, True)
    assert cfg.attn_softcap is None and cfg.final_softcap is None


def test_tinystories_gpt_neo_alternates_global_and_local():
    cfg = config_from_hf(TINYSTORIES_33M)
    assert cfg.layer_types == ("full", "sliding", "full", "sliding")
    assert (cfg.sliding_window, cfg.attn_scale, cfg.d_mlp) == (256, 1.0, 4 * 768)


def test_qwen25_without_use_sliding_window_has_no_window():
    cfg = config_from_hf(QWEN25_05B)
    assert cfg.layer_types is None and cfg.attn_bias and not cfg.has_out_bias
    assert cfg.n_heads == 14 and cfg.n_kv_heads == 2


def test_opt_and_phi3():
    opt = config_from_hf(OPT_125M)
    assert (opt.family, opt.position_offset, opt.act, opt.tie_embeddings) == ("opt", 2, "relu",
                                                                             True)
    phi = config_from_hf(PHI3_MINI)
    assert phi.family == "phi3" and phi.layer_types == ("sliding",) * 32
    assert phi.sliding_window == 2047 and phi.rotary_dim is None


@pytest.mark.parametrize("config, message", [
    (dict(PHI3_MINI, rope_scaling={"type": "longrope", "long_factor": [1.0],
                                   "short_factor": [1.0]}), "rotary scaling 'longrope'"),
    (dict(OPT_125M, hidden_size=1024, word_embed_proj_dim=512), "OPT-350m"),
    (dict(OPT_125M, do_layer_norm_before=False), "do_layer_norm_before"),
    (dict(LLAMA_32_1B, rope_scaling={"rope_type": "yarn", "factor": 4.0}), "'yarn'"),
    (dict(PYTHIA_70M, hidden_act="gelu_fast"), "activation 'gelu_fast'"),
    (dict(GEMMA2_2B, layer_types=["sliding_attention"] * 3), "for each of the 26 layers"),
    (dict(LLAMA_32_1B, rope_scaling=dict(LLAMA_32_1B["rope_scaling"], factor=None)),
     "factor"),
])
def test_what_the_engine_cannot_run_exactly_is_refused_by_name(config, message):
    with pytest.raises(ModelLoadError, match=message):
        config_from_hf(config)


def test_a_multimodal_gemma3_loads_its_language_model_with_transformers_defaults():
    """gemma-3-4b-it's config.json lists only what differs from Gemma3TextConfig."""
    cfg = config_from_hf({"model_type": "gemma3", "vision_config": {"model_type": "siglip"},
                          "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
                                          "model_type": "gemma3_text", "num_hidden_layers": 34,
                                          "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                                          "sliding_window": 1024}})
    assert (cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.d_vocab) == (
        2560, 8, 4, 256, 262208)
    assert (cfg.rope_scaling, cfg.rope_factor, cfg.rope_theta, cfg.rope_local_theta) == (
        "linear", 8.0, 1e6, 1e4)
    assert cfg.layer_types[:6] == ("sliding",) * 5 + ("full",) and cfg.sliding_window == 1024
    assert cfg.final_softcap is None and cfg.qk_norm and cfg.tie_embeddings


@pytest.mark.parametrize("change, message", [
    ({"layer_types": ["full", "sliding"], "sliding_window": None}, "need a sliding_window"),
    ({"layer_types": ["full"]}, "for each of the 2 layers"),
    ({"rotary_dim": 3}, "rotary_dim must be an even number"),
    ({"attn_softcap": -1.0}, "positive numbers or null"),
    ({"rope_scaling": "yarn"}, "rope_scaling must be one of"),
    ({"block": "parallel", "attn_only": True, "d_mlp": 0}, "needs an MLP"),
])
def test_the_new_config_fields_are_validated(change, message):
    from model.config import TransformerConfig

    base = dict(family="llama", d_model=16, n_heads=2, n_layers=2, n_ctx=32, d_vocab=50,
                d_mlp=24, positions="rotary", sliding_window=4)
    with pytest.raises(ValueError, match=message):
        TransformerConfig(**{**base, **change})
    TransformerConfig(**{**base, "layer_types": ["full", "sliding"]})  # a list from JSON is fine
