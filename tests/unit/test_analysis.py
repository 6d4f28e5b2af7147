"""Unit tests for analysis/rollout.py and analysis/qk.py: rollout, special-token filtering, the Q·K breakdown."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.qk import qk_breakdown
from analysis.rollout import attention_rollout, drop_special, head_average
from model.config import TransformerConfig
from model.hooks import caching_hook, hooks
from model.trace import Trace
from model.transformer import HookedTransformer

# ------------------------------------------------------------------------------ rollout
EYE = np.eye(3)
FIRST = np.array([[1.0, 0, 0]] * 3)  # every query looks at token 0
UNIFORM = np.full((3, 3), 1 / 3)
TWO_LAYERS = np.stack([np.stack([EYE, FIRST]), np.stack([UNIFORM, UNIFORM])])  # [2, 2, 3, 3]


def test_rollout_matches_a_hand_computation():
    # Layer 0: heads average to ½I + ½F; with the residual Ã0 = ¾I + ¼F:
    #   rows [1, 0, 0], [¼, ¾, 0], [¼, 0, ¾].
    # Layer 1: Ã1 = ½·J/3 + ½I: rows [⅔, ⅙, ⅙] and permutations. R1 = Ã1 · Ã0:
    #   row 0 = ⅔[1,0,0] + ⅙[¼,¾,0] + ⅙[¼,0,¾] = [¾, ⅛, ⅛]
    #   row 1 = ⅙[1,0,0] + ⅔[¼,¾,0] + ⅙[¼,0,¾] = [⅜, ½, ⅛]
    rollout = attention_rollout(TWO_LAYERS)
    assert rollout.shape == (2, 3, 3)
    np.testing.assert_allclose(rollout[0], [[1, 0, 0], [0.25, 0.75, 0], [0.25, 0, 0.75]])
    np.testing.assert_allclose(rollout[1], [[0.75, 0.125, 0.125], [0.375, 0.5, 0.125],
                                            [0.375, 0.125, 0.5]])


def test_rollout_without_residual_is_the_plain_product():
    rollout = attention_rollout(torch.tensor(TWO_LAYERS), add_residual=False)
    avg0 = 0.5 * EYE + 0.5 * FIRST
    np.testing.assert_allclose(rollout[0], avg0)
    np.testing.assert_allclose(rollout[1], UNIFORM @ avg0)
    # avg0's rows are [1,0,0], [½,½,0], [½,0,½]; their mean is [⅔, ⅙, ⅙], in every row.
    np.testing.assert_allclose(rollout[1], [[2 / 3, 1 / 6, 1 / 6]] * 3)


def test_rollout_rows_sum_to_one_on_random_attention():
    rng = np.random.default_rng(0)
    a = rng.random((4, 3, 9, 9)) ** 4
    a /= a.sum(-1, keepdims=True)
    rollout = attention_rollout(a)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-12)
    assert (rollout >= 0).all()


def test_rollout_rejects_wrong_shapes():
    with pytest.raises(ValueError, match="n_layers, head, q_pos, k_pos"):
        attention_rollout(np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="q_pos == k_pos"):
        attention_rollout(np.ones((2, 2, 3, 4)))


def test_head_average():
    np.testing.assert_allclose(head_average(TWO_LAYERS, 0), 0.5 * EYE + 0.5 * FIRST)
    with pytest.raises(ValueError, match="layer"):
        head_average(TWO_LAYERS, 2)


# ---------------------------------------------------------------------------- drop_special
def test_drop_special_renormalises_and_returns_kept_positions():
    m = np.array([[0.5, 0.3, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
    out, kept = drop_special(m, np.array([False, True, True]))
    assert kept == [1, 2]
    np.testing.assert_allclose(out, [[0.5, 0.5], [1 / 9, 8 / 9]])


def test_drop_special_leaves_an_emptied_row_at_zero():
    m = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.2, 0.4, 0.4]])
    out, kept = drop_special(m, torch.tensor([False, True, True]))
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, [[0.0, 0.0], [0.5, 0.5]])


def test_drop_special_checks_its_inputs():
    with pytest.raises(ValueError, match="keep_mask"):
        drop_special(np.eye(3), np.array([True, False]))
    with pytest.raises(ValueError, match="nothing is left"):
        drop_special(np.eye(2), np.array([False, False]))


# ---------------------------------------------------------------------------- qk_breakdown
def _trace(cfg: TransformerConfig, ids: torch.Tensor, mask: torch.Tensor | None = None) -> Trace:
    """A trace from a tiny random model, built the way LoadedModel._run builds one."""
    torch.manual_seed(0)
    model = HookedTransformer(cfg).eval()
    with torch.no_grad():  # sharper attention than the default 0.02 init gives
        for block in model.blocks:
            block.attn.W_Q.normal_(0, 0.6)
            block.attn.W_K.normal_(0, 0.6)
    mask = torch.ones_like(ids) if mask is None else mask
    cache: dict[str, torch.Tensor] = {}
    with torch.inference_mode(), hooks(model.hook_names, [(lambda n: True, caching_hook(cache))]):
        model(ids, mask)
    return Trace(
        model_name="tiny", cfg=cfg, batch_tokens=[[f"t{i}" for i in row] for row in ids.tolist()],
        input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids),
        special_mask=1 - mask, dropped=[0] * ids.shape[0], cache=cache,
        batched=ids.shape[0] > 1,
    )


GPT2_LIKE = TransformerConfig(family="gpt2", d_model=16, n_heads=4, n_layers=2, n_ctx=16,
                              d_vocab=20, d_mlp=32, causal=True, has_lm_head=True)
LLAMA_GQA = TransformerConfig(family="llama", d_model=32, n_heads=4, n_kv_heads=2, n_layers=2,
                              n_ctx=16, d_vocab=20, d_mlp=40, positions="rotary", norm="rmsnorm",
                              act="silu", gated_mlp=True, attn_bias=False, mlp_bias=False)
BERT_LIKE = TransformerConfig(family="bert", d_model=16, n_heads=2, n_layers=2, n_ctx=16,
                              d_vocab=20, d_mlp=32, block="post_ln", causal=False,
                              embed_norm=True)


def _assert_matches_cache(trace: Trace, layer: int, head: int, query: int, item: int = 0):
    b = qk_breakdown(trace, layer, head, query, item=item)
    attn = f"blocks.{layer}.attn."
    # q·k: both are float32 dot products of the same d_head numbers in a different order.
    torch.testing.assert_close(torch.from_numpy(b["qk"]),
                               trace.cache[attn + "hook_qk"][item, head, query],
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.from_numpy(b["softmax"]),
                               trace.cache[attn + "hook_pattern"][item, head, query],
                               rtol=1e-5, atol=1e-6)
    scores = trace.cache[attn + "hook_scores"][item, head, query]
    blocked = scores == torch.finfo(torch.float32).min
    np.testing.assert_array_equal(b["masked"], blocked.numpy())
    assert np.isneginf(b["scaled"][b["masked"]]).all()
    np.testing.assert_allclose(b["scaled"][~b["masked"]], scores[~blocked].numpy(),
                               rtol=1e-5, atol=1e-5)
    assert b["softmax"][b["masked"]].sum() == 0
    return b


def test_qk_breakdown_matches_the_cache_for_a_causal_model():
    trace = _trace(GPT2_LIKE, torch.tensor([[3, 1, 4, 1, 5, 9, 2]]))
    for layer, head, query in [(0, 0, 0), (0, 3, 6), (1, 2, 4)]:
        b = _assert_matches_cache(trace, layer, head, query)
        assert b["masked"].tolist() == [k > query for k in range(7)]
        assert not b["rotary"] and b["kv_head"] == head
        np.testing.assert_allclose(b["q"], trace.cache[f"blocks.{layer}.attn.hook_q"][0, head,
                                                                                       query])
    assert b["softmax"].max() > 0.3  # the pattern is not flat, so equality means something


def test_qk_breakdown_uses_rotated_vectors_and_the_right_kv_head_under_gqa():
    trace = _trace(LLAMA_GQA, torch.tensor([[1, 7, 7, 2, 8, 3]]))
    for head in range(4):
        b = _assert_matches_cache(trace, 1, head, 5)
        assert b["kv_head"] == head // 2 and b["rotary"]
        np.testing.assert_allclose(b["keys"], trace.cache["blocks.1.attn.hook_rot_k"][0, head // 2])
    q_rot = trace.cache["blocks.1.attn.hook_rot_q"][0, 3, 5]
    np.testing.assert_allclose(b["q"], q_rot)
    assert not np.allclose(b["q"], trace.cache["blocks.1.attn.hook_q"][0, 3, 5])
    # The other k/v head would give a different row: the mapping is what makes the match.
    wrong = trace.cache["blocks.1.attn.hook_rot_k"][0, 0] @ q_rot
    assert not torch.allclose(wrong, trace.cache["blocks.1.attn.hook_qk"][0, 3, 5], atol=1e-3)


def test_qk_breakdown_masks_padding_keys_of_a_batch_item():
    ids = torch.tensor([[2, 5, 6, 7, 8], [2, 9, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    trace = _trace(BERT_LIKE, ids, mask)
    b = _assert_matches_cache(trace, 1, 1, 1, item=1)
    assert b["masked"].tolist() == [False, False, False, True, True]
    assert _assert_matches_cache(trace, 0, 0, 1, item=0)["masked"].sum() == 0


def test_qk_breakdown_rejects_out_of_range_arguments():
    trace = _trace(GPT2_LIKE, torch.tensor([[1, 2, 3]]))
    for kwargs, word in [(dict(layer=2, head=0, query_pos=0), "layer"),
                         (dict(layer=0, head=4, query_pos=0), "head"),
                         (dict(layer=0, head=0, query_pos=3), "query_pos"),
                         (dict(layer=0, head=0, query_pos=0, item=1), "item")]:
        with pytest.raises(ValueError, match=word):
            qk_breakdown(trace, **kwargs)
