"""The frozen TransformerConfig: derived values, validation, and the HF config.json mapping."""

from __future__ import annotations

import dataclasses

import pytest

from model import ModelLoadError, TransformerConfig
from model.registry import config_from_hf

BASE = dict(family="gpt2", d_model=32, n_heads=4, n_layers=2, n_ctx=16, d_vocab=50, d_mlp=64)


def test_config_is_frozen():
    cfg = TransformerConfig(**BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 64
    assert dataclasses.replace(cfg, d_model=64).d_model == 64 and cfg.d_model == 32


def test_derived_values():
    cfg = TransformerConfig(**BASE)
    assert (cfg.d_head, cfg.n_kv_heads, cfg.is_decoder) == (8, 4, True)
    gqa = TransformerConfig(**{**BASE, "n_kv_heads": 2, "d_head": 16, "positions": "rotary"})
    assert (gqa.d_head, gqa.n_kv_heads) == (16, 2)  # d_head need not be d_model / n_heads


def test_dict_round_trip_and_unknown_fields():
    cfg = TransformerConfig(**{**BASE, "n_kv_heads": 2})
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match=r"unknown config fields: \['colour'\]"):
        TransformerConfig.from_dict({**BASE, "colour": "red"})


@pytest.mark.parametrize("change, message", [
    ({"d_model": 30}, "d_model=30 is not divisible by n_heads=4"),
    ({"n_heads": 0}, "must be positive"),  # once a ZeroDivisionError from d_model % n_heads
    ({"n_layers": -1}, "must be positive"),
    ({"n_kv_heads": 3}, "n_heads=4 must be a multiple of n_kv_heads=3"),
    ({"n_kv_heads": 0}, "n_kv_heads must be positive"),  # once a ZeroDivisionError
    ({"d_head": 0}, "d_head must be positive"),
    ({"d_model": "32"}, "must be integers"),  # once a TypeError from comparing str and int
    ({"n_heads": True}, "must be integers"),
    ({"d_mlp": 0}, "d_mlp must be >= 0, and positive unless attn_only"),
    ({"family": "bloom"}, "family must be one of"),
    ({"positions": "alibi"}, "positions must be one of"),
    ({"norm": "batchnorm"}, "norm must be one of"),
    ({"block": "macaron"}, "block must be one of"),  # sandwich is Gemma 2's
    ({"act": "swish"}, "act must be one of"),
    ({"positions": "rotary", "d_model": 12, "n_heads": 4}, "rotary needs an even d_head"),
    ({"n_token_types": -1}, "counts must be >= 0"),
])
def test_validation_raises_value_error(change, message):
    with pytest.raises(ValueError, match=message):
        TransformerConfig(**{**BASE, **change})


def test_attention_only_needs_no_mlp():
    assert TransformerConfig(**{**BASE, "d_mlp": 0, "attn_only": True}).attn_only


def test_hf_config_mapping_for_roberta_and_llama():
    roberta = config_from_hf({
        "model_type": "roberta", "hidden_size": 32, "num_attention_heads": 4,
        "num_hidden_layers": 2, "intermediate_size": 48, "vocab_size": 100,
        "max_position_embeddings": 514, "pad_token_id": 1, "type_vocab_size": 1})
    assert (roberta.position_offset, roberta.n_ctx, roberta.pad_token_id) == (2, 512, 1)
    assert (roberta.block, roberta.causal, roberta.has_pooler) == ("post_ln", False, True)
    llama = config_from_hf({
        "model_type": "llama", "hidden_size": 32, "num_attention_heads": 4,
        "num_key_value_heads": 1, "num_hidden_layers": 2, "intermediate_size": 48,
        "vocab_size": 100, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})
    assert (llama.n_kv_heads, llama.rope_theta, llama.norm, llama.gated_mlp) == (
        1, 5e5, "rmsnorm", True)


def test_hf_config_errors_are_model_load_errors():
    with pytest.raises(ModelLoadError, match="unsupported architecture None"):
        config_from_hf({})
    with pytest.raises(ModelLoadError, match="invalid model: d_model=30 is not divisible"):
        config_from_hf({"model_type": "bert", "hidden_size": 30, "num_attention_heads": 4,
                        "num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 10})
    with pytest.raises(ModelLoadError, match="invalid model"):
        config_from_hf({"model_type": "roberta", "hidden_size": 32, "num_attention_heads": 4,
                        "num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 10,
                        "pad_token_id": None})  # once a TypeError (None + 1)
