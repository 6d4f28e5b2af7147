"""Head ablation: exact effects on the layer, the sweep, the metrics, and a model left intact."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.ablation import (
    Inputs, ablation_hooks, effects, forward, importance_sweep, mean_pool, model_directory,
    run_ablated, sentence_pooling, text_loss,
)
from model.blocks import PreLNBlock
from model.config import TransformerConfig
from model.hook_names import hook_names
from model.hooks import _ACTIVE, hooks, hooks_active
from model.transformer import attention_mask_bias

TEXT = "The cat sat on the mat."


def _block_without_attention(block, x: torch.Tensor) -> torch.Tensor:
    """A block's output written out by hand with attention contributing only W_O's bias
    (what is left when every head's z is 0). x: [batch, pos, d_model]."""
    b_o = block.attn.b_O if block.attn.b_O is not None else torch.zeros(x.shape[-1])
    if isinstance(block, PreLNBlock):  # x + attn(ln1 x), then + mlp(ln2 .)
        mid = x + b_o
        return mid + block.mlp(block.ln2(mid))
    mid = block.ln1(x + b_o)  # post-LN: ln1(x + attn x), then ln2(. + mlp .)
    return block.ln2(mid + block.mlp(mid))


@pytest.mark.parametrize("family", ["gpt2", "llama", "bert", "roberta"])
@pytest.mark.parametrize("layer", [0, 1])
def test_zeroing_every_head_of_a_layer_removes_its_attention(tiny_models_loaded, family, layer):
    loaded = tiny_models_loaded[family]
    model, cfg = loaded.model, loaded.cfg
    inputs = Inputs.encode(loaded, TEXT)
    clean = loaded.run(TEXT)
    ablated = run_ablated(loaded, inputs, [(layer, h) for h in range(cfg.n_heads)], "zero")

    # Reference 1, by hand: the block's input from the clean run (earlier layers are
    # untouched), the block without attention, then the remaining blocks and the final norm.
    mask = attention_mask_bias(inputs.attention_mask, cfg.causal, torch.float32)
    with torch.no_grad():
        x = _block_without_attention(model.blocks[layer],
                                     clean.cache[f"blocks.{layer}.hook_resid_pre"])
        for block in model.blocks[layer + 1:]:
            x = block(x, mask)
        reference = model.ln_final(x) if model.ln_final is not None else x
    # float32 through at most 2 blocks of width 32: observed differences are ~1e-7
    torch.testing.assert_close(ablated.final, reference, atol=1e-5, rtol=1e-5)

    # Reference 2: the layer's attention output replaced by its bias through the hook point.
    bias = model.blocks[layer].attn.b_O
    def bias_only(t, name):
        return torch.zeros_like(t) + (bias if bias is not None else 0)
    with hooks(loaded.hook_names, [(f"blocks.{layer}.hook_attn_out", bias_only)]):
        via_attn_out = loaded.run(TEXT, keep=lambda n: False)
    torch.testing.assert_close(ablated.final, via_attn_out.final[:1], atol=1e-5, rtol=1e-5)
    # ... and removing the heads really changed something.
    assert (ablated.final - clean.final).abs().max() > 1e-3


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_mean_ablating_one_head_by_hand(tiny_models_loaded, family):
    loaded = tiny_models_loaded[family]
    layer, head = 1, 2
    clean = loaded.run(TEXT)
    inputs = Inputs.encode(loaded, TEXT)
    which = {layer: torch.tensor([[h == head for h in range(loaded.cfg.n_heads)]])}
    with hooks(loaded.hook_names, ablation_hooks(which, "mean", inputs.attention_mask,
                                                   hook_names(loaded.cfg))):
        ablated = loaded.run(TEXT)
    z = clean.cache[f"blocks.{layer}.attn.hook_z"][0, head]  # [pos, d_head]
    w_o = loaded.model.blocks[layer].attn.W_O[head]  # [d_head, d_model]
    # attn_out = sum over heads of z_h W_O[h] + b_O: only head `head`'s term changes.
    expected = clean.cache[f"blocks.{layer}.hook_attn_out"][0] + (z.mean(0) - z) @ w_o
    torch.testing.assert_close(ablated.cache[f"blocks.{layer}.hook_attn_out"][0], expected,
                               atol=1e-5, rtol=1e-5)
    z_after = ablated.cache[f"blocks.{layer}.attn.hook_z"][0]  # [head, pos, d_head]
    torch.testing.assert_close(z_after[head], z.mean(0).expand_as(z))
    others = [h for h in range(loaded.cfg.n_heads) if h != head]
    torch.testing.assert_close(z_after[others], clean.cache[f"blocks.{layer}.attn.hook_z"][0,
                                                                                          others])


def test_mean_ignores_padding_and_zero_only_touches_chosen_items():
    z = torch.arange(24, dtype=torch.float32).reshape(2, 2, 3, 2)  # [batch, head, pos, d_head]
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    names = hook_names(TransformerConfig(family="gpt2", d_model=4, n_heads=2, n_layers=1,
                                         n_ctx=3, d_vocab=5, d_mlp=8))
    (_, mean_fn), = ablation_hooks({0: torch.tensor([[True, False]])}, "mean", mask, names)
    out = mean_fn(z, "blocks.0.attn.hook_z")
    torch.testing.assert_close(out[0, 0], torch.tensor([[1.0, 2.0]] * 3))  # mean of rows 0-1
    torch.testing.assert_close(out[1, 0], torch.tensor([[14.0, 15.0]] * 3))  # mean of 3 rows
    torch.testing.assert_close(out[:, 1], z[:, 1])
    (_, zero_fn), = ablation_hooks({0: torch.tensor([[False, True], [False, False]])}, "zero",
                                   mask, names)
    out = zero_fn(z, "blocks.0.attn.hook_z")
    assert out[0, 1].abs().sum() == 0 and torch.equal(out[1], z[1]) and torch.equal(out[0, 0],
                                                                                   z[0, 0])
    with pytest.raises(ValueError, match="mode"):
        ablation_hooks({}, "shuffle", mask, names)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_sweep_matches_a_full_run_per_head_on_a_decoder(tiny_models_loaded, family):
    # The sweep reuses the clean input of each head's layer and batches the copies; every
    # cell must equal a separate full forward pass with just that head removed.
    loaded = tiny_models_loaded[family]
    inputs = Inputs.encode(loaded, TEXT)
    batched = importance_sweep(loaded, inputs, "zero")
    one_by_one = importance_sweep(loaded, inputs, "zero", chunk=1)
    assert set(batched) == {"tokens", "loss"} and batched["loss"].shape == (2, 4)
    clean = forward(loaded, inputs)
    for layer in range(2):
        for head in range(4):
            single = effects(clean, run_ablated(loaded, inputs, [(layer, head)]), inputs)
            for name in batched:  # batched vs single runs: float32 summation order only
                assert batched[name][layer, head] == pytest.approx(
                    float(single[name][0]), abs=1e-5), (name, layer, head)
                assert one_by_one[name][layer, head] == pytest.approx(
                    float(single[name][0]), abs=1e-5), (name, layer, head)
    assert np.abs(batched["loss"]).max() > 1e-4  # some head matters


@pytest.mark.parametrize("family", ["bert", "llama"])
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_sweep_reusing_the_layers_attention_matches_full_runs(tiny_models_loaded, family, mode):
    # The sweep computes a head's own layer once and adds (replacement − z_h) @ W_O[h] per
    # copy; the previous way recomputes that layer per copy, and separate full runs are the
    # reference for both. Post-LN (bert) and pre-LN with grouped-query attention (llama).
    loaded = tiny_models_loaded[family]
    inputs = Inputs.encode(loaded, TEXT)
    reused = importance_sweep(loaded, inputs, mode, chunk=3)
    full = importance_sweep(loaded, inputs, mode, reuse_attention=False)
    clean = forward(loaded, inputs)
    for layer in range(loaded.cfg.n_layers):
        for head in range(loaded.cfg.n_heads):
            single = effects(clean, run_ablated(loaded, inputs, [(layer, head)], mode), inputs)
            for name in single:
                assert reused[name][layer, head] == pytest.approx(
                    float(single[name][0]), abs=1e-5), (name, layer, head)
                assert full[name][layer, head] == pytest.approx(
                    float(single[name][0]), abs=1e-5), (name, layer, head)
    assert reused["tokens"].max() > 1e-4  # removing a head changes something


def test_text_loss_equals_hugging_face(tiny_dirs, tiny_models_loaded):
    from transformers import AutoModelForCausalLM

    loaded = tiny_models_loaded["gpt2"]
    inputs = Inputs.encode(loaded, TEXT)
    ours = text_loss(forward(loaded, inputs).logits, inputs.input_ids, inputs.attention_mask)
    hf = AutoModelForCausalLM.from_pretrained(tiny_dirs["gpt2"]).eval()
    with torch.no_grad():
        theirs = hf(inputs.input_ids, labels=inputs.input_ids).loss
    assert float(ours[0]) == pytest.approx(float(theirs), abs=1e-4)  # float32 logits, 2 layers


def test_minilm_sentence_embedding_by_hand_and_by_sentence_transformers(minilm):
    inputs = Inputs.encode(minilm, TEXT)
    final = forward(minilm, inputs).final[0].double().numpy()  # [pos, d_model]
    by_hand = final.sum(0) / final.shape[0]  # mean over every token, [CLS] and [SEP] included
    by_hand /= np.sqrt((by_hand ** 2).sum())
    ours = mean_pool(torch.from_numpy(final)[None], inputs.attention_mask)[0].numpy()
    np.testing.assert_allclose(ours, by_hand, atol=1e-12)
    # Padding does not count: the same text padded in a batch pools to the same vector.
    enc = minilm.encode([TEXT, TEXT + " And a much longer second sentence follows it."])
    padded = forward(minilm, Inputs(enc.input_ids, enc.attention_mask, enc.token_type_ids))
    pooled = mean_pool(padded.final, enc.attention_mask)[0].double().numpy()
    np.testing.assert_allclose(pooled, by_hand, atol=1e-5)  # batched float32 vs single
    assert sentence_pooling(model_directory("minilm")) == "mean"

    st = pytest.importorskip("sentence_transformers")
    reference = st.SentenceTransformer(str(model_directory("minilm")), device="cpu").encode(
        [TEXT], convert_to_numpy=True)[0]
    np.testing.assert_allclose(ours, reference, atol=1e-5)  # float32 vs float32, 6 layers


def test_minilm_sweep_with_sentence_metric(minilm):
    inputs = Inputs.encode(minilm, TEXT)
    sweep = importance_sweep(minilm, inputs, "mean", pooling="mean")
    assert set(sweep) == {"tokens", "sentence"} and sweep["sentence"].shape == (6, 12)
    clean = forward(minilm, inputs)
    single = effects(clean, run_ablated(minilm, inputs, [(3, 5)], "mean"), inputs, "mean")
    assert sweep["sentence"][3, 5] == pytest.approx(float(single["sentence"][0]), abs=1e-5)
    assert (sweep["sentence"] >= -1e-6).all() and sweep["sentence"].max() > 1e-4


def test_directories_and_pooling(tiny_dirs):
    assert sentence_pooling(tiny_dirs["bert"]) is None  # no 1_Pooling/config.json
    assert model_directory("gpt2") is None  # a hub id is never downloaded here
    assert model_directory(str(tiny_dirs["gpt2"])) == tiny_dirs["gpt2"]


def test_bad_heads_are_refused(tiny_models_loaded):
    loaded = tiny_models_loaded["gpt2"]
    inputs = Inputs.encode(loaded, TEXT)
    with pytest.raises(ValueError, match="outside 2 layers"):
        run_ablated(loaded, inputs, [(2, 0)])
    with pytest.raises(ValueError, match="mode"):
        run_ablated(loaded, inputs, [(0, 0)], "half")


def _snapshot(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_the_shared_model_is_unchanged(tiny_models_loaded, family):
    loaded = tiny_models_loaded[family]
    model = loaded.model
    before = _snapshot(model)
    first = loaded.run(TEXT, keep=lambda n: False).final
    inputs = Inputs.encode(loaded, TEXT)
    run_ablated(loaded, inputs, [(0, 0), (1, 3)], "zero")
    run_ablated(loaded, inputs, [(1, 1)], "mean")
    importance_sweep(loaded, inputs, "mean")

    def boom(t, name):
        raise RuntimeError("a hook failed")
    with pytest.raises(RuntimeError, match="a hook failed"):
        forward(loaded, inputs, [("blocks.0.attn.hook_z", boom)])

    after = model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not hooks_active() and _ACTIVE.get() is None
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    torch.testing.assert_close(loaded.run(TEXT, keep=lambda n: False).final, first,
                               atol=0, rtol=0)
