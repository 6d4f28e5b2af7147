"""The original transformer's sinusoidal family, built directly with HookedTransformer, and
this project's own model-directory format (config.json with model_type "attention_lab")."""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import save_file
from torch.testing import assert_close

from model import HookedTransformer, ModelLoadError, TransformerConfig, load_model
from model.hooks import caching_hook, hooks


def sinusoidal_cfg(**overrides) -> TransformerConfig:
    settings = dict(family="own", positions="sinusoidal", block="post_ln", d_model=8,
                    n_heads=2, n_layers=2, n_ctx=16, d_vocab=11, d_mlp=16, act="relu",
                    causal=False, embed_scale=True)
    settings.update(overrides)
    return TransformerConfig(**settings)


def run_cached(model: HookedTransformer, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    cache: dict[str, torch.Tensor] = {}
    with torch.no_grad(), hooks(model.hook_names, [(lambda n: True, caching_hook(cache))]):
        model(ids)
    return cache


def formula(n_pos: int, d: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)),
    written out one number at a time (no code shared with model/layers.py)."""
    pe = torch.zeros(n_pos, d, dtype=torch.float64)
    for pos in range(n_pos):
        for j in range(d):
            two_i = j - j % 2
            angle = pos / 10000 ** (two_i / d)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize("d_model, n_heads", [(8, 2), (9, 3)])  # odd d_model: last column sin
def test_position_hook_is_the_sinusoidal_formula(d_model, n_heads):
    torch.manual_seed(0)
    model = HookedTransformer(sinusoidal_cfg(d_model=d_model, n_heads=n_heads)).eval()
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]])  # [batch, pos]
    cache = run_cached(model, ids)
    expected = formula(12, d_model).float()  # [pos, d_model]
    # 1e-6: float64 table rounded once to float32 (values in [-1, 1], ulp 6e-8).
    assert_close(cache["embed.hook_pos"][0], expected, atol=1e-6, rtol=0)
    assert_close(cache["embed.hook_pos"][0, 0], torch.tensor([0.0, 1.0] * (d_model // 2)
                                                             + [0.0] * (d_model % 2)))
    # The token embedding is scaled by sqrt(d_model) before the sum (embed_scale=True).
    scaled = model.embed.W_E.weight[ids[0]] * math.sqrt(d_model)
    assert_close(cache["embed.hook_tok"][0], scaled, atol=1e-6, rtol=1e-6)
    assert_close(cache["embed.hook_sum"], cache["embed.hook_tok"] + cache["embed.hook_pos"])


def test_causal_sinusoidal_model_has_zero_attention_above_the_diagonal():
    torch.manual_seed(0)
    model = HookedTransformer(sinusoidal_cfg(causal=True)).eval()
    cache = run_cached(model, torch.tensor([[1, 2, 3, 4, 5, 6, 7]]))
    above = torch.ones(7, 7, dtype=torch.bool).triu(1)
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]  # [batch, head, q_pos, k_pos]
        assert torch.count_nonzero(pattern[..., above]) == 0
        assert (pattern[..., ~above] > 0).all()


def test_bidirectional_sinusoidal_model_looks_both_ways():
    torch.manual_seed(0)
    model = HookedTransformer(sinusoidal_cfg(causal=False)).eval()
    pattern = run_cached(model, torch.tensor([[1, 2, 3, 4]]))["blocks.0.attn.hook_pattern"]
    assert (pattern > 0).all()


def test_attention_only_model_has_no_mlp_hooks_and_every_hook_fires():
    torch.manual_seed(0)
    model = HookedTransformer(sinusoidal_cfg(attn_only=True, d_mlp=0)).eval()
    block = ["ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_qk",
             "attn.hook_scores", "attn.hook_pattern", "attn.hook_z", "hook_resid_pre",
             "hook_attn_out", "hook_resid_mid", "hook_resid_post"]
    expected = ["embed.hook_tok", "embed.hook_pos", "embed.hook_sum"] + [
        f"blocks.{i}.{s}" for i in range(2) for s in block]
    assert list(model.hook_names) == expected
    assert not any("mlp" in name or "ln2" in name for name in model.hook_names)
    cache = run_cached(model, torch.tensor([[1, 2, 3]]))
    assert list(cache) and set(cache) == set(expected)
    # Without an MLP the block's output is its middle.
    assert torch.equal(cache["blocks.0.hook_resid_post"], cache["blocks.0.hook_resid_mid"])


# ------------------------------------------------------------- our own directory format
def save_own(model: HookedTransformer, directory, chars: str = "abc ?") -> None:
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(
        {"model_type": "attention_lab", "config": model.cfg.to_dict()}))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()},
              str(directory / "model.safetensors"))
    (directory / "tokenizer.json").write_text(json.dumps({"chars": chars}))


def test_own_format_round_trips_through_load_model(tmp_path):
    torch.manual_seed(0)
    model = HookedTransformer(sinusoidal_cfg(causal=True, d_vocab=5)).eval()
    save_own(model, tmp_path / "own")
    lm = load_model(str(tmp_path / "own"))
    assert lm.cfg == model.cfg
    trace = lm.run("abcab")
    assert trace.tokens == ["a", "b", "c", "a", "b"]
    expected = run_cached(model, torch.tensor([[0, 1, 2, 0, 1]]))
    assert torch.equal(trace.cache["blocks.1.attn.hook_pattern"],
                       expected["blocks.1.attn.hook_pattern"])
    long = lm.run("ab" * 10)  # n_ctx is 16
    assert (long.n_tokens, long.n_dropped) == (16, 4)


def _write_config(directory, **fields) -> None:
    (directory / "config.json").write_text(json.dumps({"model_type": "attention_lab", **fields}))


BREAKAGES = {  # what is wrong -> (how to break a good directory, what the message must say)
    "config lacks fields": (lambda d: _write_config(d, config={"family": "own"}),
                            "not a valid attention_lab config"),
    "no config at all": (lambda d: _write_config(d), "not a valid attention_lab config"),
    "unknown field": (lambda d: _write_config(d, config={"colour": "red"}), "unknown config"),
    "no tokenizer.json": (lambda d: (d / "tokenizer.json").unlink(), "character tokenizer"),
}


@pytest.mark.parametrize("what", sorted(BREAKAGES))
def test_broken_own_directories_raise_model_load_error(tmp_path, what):
    torch.manual_seed(0)
    save_own(HookedTransformer(sinusoidal_cfg(d_vocab=5)), tmp_path / "own")
    breakage, message = BREAKAGES[what]
    breakage(tmp_path / "own")
    with pytest.raises(ModelLoadError, match=message):
        load_model(str(tmp_path / "own"))
