"""Loading BART, Marian and T5 folders: what they become, and clear messages for broken ones."""

from __future__ import annotations

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file

import tiny_seq2seq
from model.loading import load_model
from model.registry import ModelLoadError
from model.runner import Seq2SeqModel


def _copy(tmp_path, family: str):
    target = tmp_path / family
    shutil.copytree(tiny_seq2seq.folder(family), target)
    return target


def _edit_config(directory, **changes) -> None:
    path = directory / "config.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("family,positions,block", [
    ("bart", "learned", "post_ln"), ("marian", "sinusoidal", "post_ln"),
    ("t5", "relative", "pre_ln"), ("t5_gated", "relative", "pre_ln")])
def test_each_family_loads_as_an_encoder_decoder(family, positions, block):
    lm = load_model(str(tiny_seq2seq.folder(family)), device="cpu")
    assert isinstance(lm, Seq2SeqModel)
    assert lm.cfg.positions == positions and lm.cfg.block == block
    assert lm.model.dec_cfg.n_layers == 3 and lm.cfg.n_layers == 2
    assert lm.cfg.causal is False and lm.model.dec_cfg.causal is True
    assert lm.model.dec_cfg.gated_mlp == (family == "t5_gated")
    trace = lm.run("I love cats!")
    assert trace.kind == "encoder_decoder" and isinstance(trace.outputs[0], str)


@pytest.mark.parametrize("family,changes,message", [
    ("t5", {"feed_forward_proj": "gated-foo"}, r"invalid t5 model: activation 'foo'"),
    ("t5", {"num_heads": "five"}, "invalid t5 model"),
    ("t5", {"relative_attention_num_buckets": 2}, "relative_attention_num_buckets"),
    ("t5", {"relative_attention_num_buckets": 10**9}, "relative_attention_num_buckets"),
    ("bart", {"normalize_before": True}, "pre-norm BART"),
    ("marian", {"decoder_vocab_size": 7}, "own decoder vocabulary"),
    ("bart", {"d_model": None}, "invalid bart model"),
])
def test_a_broken_config_gives_a_message(tmp_path, family, changes, message):
    directory = _copy(tmp_path, family)
    _edit_config(directory, **changes)
    with pytest.raises(ModelLoadError, match=message):
        load_model(str(directory), device="cpu")


@pytest.mark.parametrize("family,missing", [
    ("t5", "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
    ("bart", "model.decoder.layers.1.encoder_attn.k_proj.weight")])
def test_a_missing_weight_is_named(tmp_path, family, missing):
    directory = _copy(tmp_path, family)
    state = load_file(directory / "model.safetensors")
    assert missing in state
    del state[missing]
    save_file(state, directory / "model.safetensors")
    with pytest.raises(ModelLoadError, match="lack"):
        load_model(str(directory), device="cpu")
