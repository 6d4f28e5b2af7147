"""The forward-pass walkthrough (analysis/walkthrough/) and its figures (viz/walkthrough.py).

The expected shapes below are written from the config and the input length only, never read
from the walkthrough, so a step that showed a tensor of the wrong shape (or a reshape that
moved the wrong axis) fails here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from model import HookedTransformer, LoadedModel, TransformerConfig
from analysis.walkthrough import preview, walkthrough
from viz.style import MASKED_GREY
from viz.walkthrough import (
    MAX_VALUE_COLUMNS, allowed_matrix, mask_matrix, scores_heatmap, token_table, top_tokens_bar,
    values_heatmap,
)

PAIR = ("I love cats!", "He hates pineapple pizza.")
# Seed 001 prints these: bert-base-cased's ids for the two sentences padded together.
SEED_IDS = [[101, 146, 1567, 11771, 106, 102, 0, 0, 0],
            [101, 1124, 18457, 10194, 11478, 7136, 13473, 119, 102]]
SEED_MASK = [[1, 1, 1, 1, 1, 1, 0, 0, 0], [1] * 9]


def expected_shapes(cfg, batch: int, pos: int) -> dict[tuple[str, str], tuple[int, ...]]:
    """(step key, tensor label) -> shape, from the config alone."""
    b, t, d, h, kv, dh = batch, pos, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    bt, btd, bhtt, bhtd = (b, t), (b, t, d), (b, h, t, t), (b, h, t, dh)
    mlp = (b, t, cfg.d_mlp)
    return {
        ("tokens", "input ids"): bt, ("attention_mask", "attention mask"): bt,
        ("attention_mask", "may attend (both masks)"): (b, t, t),
        ("token_types", "token type ids"): bt,
        ("embed_tok", "token embedding"): btd, ("embed_type", "token type embedding"): btd,
        ("embed_pos", "position embedding"): btd, ("embed_sum", "sum"): btd,
        ("embed_norm", "normalized embeddings"): btd, ("layer_input", "X"): btd,
        ("ln1", "normalized X"): btd,
        ("qkv_proj", "Q"): (b, t, h * dh), ("qkv_proj", "K"): (b, t, kv * dh),
        ("qkv_proj", "V"): (b, t, kv * dh),
        ("split_heads", "Q per head"): bhtd, ("split_heads", "K per head"): (b, kv, t, dh),
        ("split_heads", "V per head"): (b, kv, t, dh),
        ("rotary", "rotated Q"): bhtd, ("rotary", "rotated K"): (b, kv, t, dh),
        ("k_transpose", "Kᵀ"): (b, h, dh, t), ("scores", "scores"): bhtt,
        ("scale", "scaled scores"): bhtt,
        ("mask", "mask M"): (b, 1, t, t) if cfg.causal else (b, 1, 1, t),
        ("mask", "masked scores"): bhtt, ("softmax", "attention pattern"): bhtt,
        ("weighted_values", "Z (context)"): bhtd, ("join_heads", "permuted"): (b, t, h, dh),
        ("join_heads", "joined"): (b, t, h * dh), ("attn_out", "attention output"): btd,
        ("resid_attn", "X + Attn"): btd, ("add_norm_attn", "X + Attn"): btd,
        ("add_norm_attn", "LayerNorm(X + Attn)"): btd, ("ln2", "normalized"): btd,
        ("mlp_up", "H"): mlp, ("mlp_up", "gate"): mlp, ("mlp_up", "up"): mlp,
        ("mlp_act", "before"): mlp, ("mlp_act", "activated"): mlp,
        ("mlp_down", "MLP output"): btd, ("resid_mlp", "layer output"): btd,
        ("add_norm_mlp", "X_mid + MLP"): btd, ("add_norm_mlp", "layer output"): btd,
        ("stack", "all layers"): (b, cfg.n_layers + 1, t, d),
        ("stack", "vector lengths"): (b, cfg.n_layers + 1, t),
        ("output", "last hidden state"): btd, ("pooler", "[CLS] vector"): (b, d),
        ("pooler", "pooled"): (b, d), ("final_norm", "final"): btd,
        ("unembed", "logits"): (b, t, cfg.d_vocab),
        ("next_token", "probabilities"): (b, cfg.d_vocab),
    }


ENCODER = ["tokens", "attention_mask", "token_types", "embed_tok", "embed_type", "embed_pos",
           "embed_sum", "embed_norm", "layer_input", "qkv_proj", "split_heads", "k_transpose",
           "scores", "scale", "mask", "softmax", "weighted_values", "join_heads", "attn_out",
           "add_norm_attn", "mlp_up", "mlp_act", "mlp_down", "add_norm_mlp", "stack", "output",
           "pooler"]
GPT2 = ["tokens", "attention_mask", "embed_tok", "embed_pos", "embed_sum", "layer_input", "ln1",
        "qkv_proj", "split_heads", "k_transpose", "scores", "scale", "mask", "softmax",
        "weighted_values", "join_heads", "attn_out", "resid_attn", "ln2", "mlp_up", "mlp_act",
        "mlp_down", "resid_mlp", "stack", "final_norm", "unembed", "next_token"]
LLAMA = [k for k in GPT2 if k not in ("embed_pos", "embed_sum")]
LLAMA.insert(LLAMA.index("k_transpose"), "rotary")


def _check_every_shape(trace, layer: int, order: list[str]) -> list:
    steps = walkthrough(trace, layer)
    assert [s.key for s in steps] == order
    batch, pos = trace.input_ids.shape
    table = expected_shapes(trace.cfg, batch, pos)
    for step in steps:
        for shown in step.shown:
            assert shown.shape == table[(step.key, shown.label)], (step.key, shown.label)
            assert len(shown.dims) == len(shown.shape)
            if shown.source.startswith("trace."):
                source = getattr(trace, shown.source[len("trace."):])
            elif "*" in shown.source:
                source = None
            else:
                source = trace.cache[shown.source]
                if step.layer is not None:  # the layer steps read the chosen layer's hooks
                    assert shown.source.startswith(f"blocks.{layer}.")
            if not shown.how:  # shown as recorded: the very tensor, not a copy or a recompute
                assert source is not None and torch.equal(shown.tensor, source)
    return steps


@pytest.mark.parametrize("as_batch", [False, True])
def test_minilm_every_shape(minilm, as_batch):
    trace = minilm.run(list(PAIR), keep=None) if as_batch else minilm.run(*PAIR, keep=None)
    _check_every_shape(trace, 3, ENCODER)
    assert trace.input_ids.shape[0] == (2 if as_batch else 1)


@pytest.mark.parametrize("family, order", [("gpt2", GPT2), ("llama", LLAMA)])
def test_decoder_every_shape_and_derived_tensors(tiny_models_loaded, family, order):
    loaded = tiny_models_loaded[family]
    trace = loaded.run(list(PAIR), keep=None)  # two texts of different lengths: padding
    steps = {s.key: s for s in _check_every_shape(trace, 1, order)}
    attn = loaded.model.blocks[1].attn
    tensors = {(k, s.label): s.tensor for k, st in steps.items() for s in st.shown}
    # Q as one [batch, pos, heads·d_head] matrix is the normalized input times the per-head
    # weights laid side by side: what Hugging Face's single Linear layer computes.
    x = tensors[("ln1", "normalized X")]
    w_q = attn.W_Q.detach().permute(1, 0, 2).reshape(attn.cfg.d_model, -1)
    q = x @ w_q + (attn.b_Q.detach().reshape(-1) if attn.b_Q is not None else 0)
    torch.testing.assert_close(tensors[("qkv_proj", "Q")], q, rtol=1e-5, atol=1e-5)  # fp32 matmul
    # The transposed key is the one the scores were made with (rotated, repeated for GQA).
    q_heads = trace.cache["blocks.1.attn.hook_rot_q" if family == "llama" else
                         "blocks.1.attn.hook_q"]
    torch.testing.assert_close(q_heads @ tensors[("k_transpose", "Kᵀ")],
                               tensors[("scores", "scores")], rtol=1e-5, atol=1e-5)
    # Joined heads times W_O is the attention output.
    joined = tensors[("join_heads", "joined")]
    out = joined @ attn.W_O.detach().reshape(-1, attn.cfg.d_model)
    out = out + (attn.b_O.detach() if attn.b_O is not None else 0)
    torch.testing.assert_close(out, tensors[("attn_out", "attention output")], rtol=1e-5,
                               atol=1e-5)
    # The mask: −∞ above the diagonal and on the shorter text's padding, 0 elsewhere.
    mask = tensors[("mask", "mask M")][:, 0]  # [batch, q_pos, k_pos]
    lengths = trace.attention_mask.sum(1)
    assert lengths[0] != lengths[1]
    pos = trace.n_tokens
    for b in range(2):
        j = torch.arange(pos)
        blocked = (j[None, :] > j[:, None]) | (j[None, :] >= lengths[b])
        assert torch.equal(mask[b] < -1e30, blocked)
    # The scores after scaling and masking are the forward pass's own.
    masked = tensors[("scale", "scaled scores")] + tensors[("mask", "mask M")]
    torch.testing.assert_close(masked, tensors[("mask", "masked scores")])
    # Next-token probabilities come from each text's last real token, not the last column.
    probs = tensors[("next_token", "probabilities")]
    short = int(lengths.argmin())
    logits = trace.cache["hook_logits"][short]
    torch.testing.assert_close(probs[short], logits[lengths[short] - 1].softmax(-1))
    assert not torch.allclose(probs[short], logits[-1].softmax(-1))
    torch.testing.assert_close(probs.sum(-1), torch.ones(2))


class _SeedTokens:
    """run_ids only needs id -> token strings; these are the ones seed 001's decode shows."""

    NAMES = {0: "[PAD]", 101: "[CLS]", 102: "[SEP]", 146: "I", 1567: "love", 11771: "cats",
             106: "!", 1124: "He", 119: "."}

    def tokens(self, ids):
        return [self.NAMES.get(i, f"#{i}") for i in ids]


@pytest.fixture(scope="module")
def bert_base_random():
    cfg = TransformerConfig(
        family="bert", d_model=768, n_heads=12, n_layers=12, n_ctx=512, d_vocab=28996,
        d_mlp=3072, positions="learned", norm="layernorm", block="post_ln", act="gelu",
        causal=False, n_token_types=2, pad_token_id=0, norm_eps=1e-12, has_pooler=True,
        embed_norm=True)
    torch.manual_seed(0)
    return LoadedModel("bert-base-cased (random weights)", HookedTransformer(cfg), _SeedTokens(),
                       torch.device("cpu"))


def test_seed_001_shapes_on_a_bert_base_sized_model(bert_base_random):
    trace = bert_base_random.run_ids(SEED_IDS, attention_mask=SEED_MASK, keep=None)
    steps = {s.key: s for s in walkthrough(trace, layer=11)}
    shapes = {(k, s.label): list(s.shape) for k, st in steps.items() for s in st.shown}
    for key in ("embed_tok", "embed_type", "embed_pos", "embed_sum", "embed_norm"):
        assert shapes[(key, steps[key].shown[0].label)] == [2, 9, 768]
    for label in ("Q per head", "K per head", "V per head"):
        assert shapes[("split_heads", label)] == [2, 12, 9, 64]
    for key, label in (("scores", "scores"), ("scale", "scaled scores"),
                       ("mask", "masked scores"), ("softmax", "attention pattern")):
        assert shapes[(key, label)] == [2, 12, 9, 9]
    assert shapes[("join_heads", "permuted")] == [2, 9, 12, 64]
    assert shapes[("join_heads", "joined")] == [2, 9, 768]
    assert shapes[("k_transpose", "Kᵀ")] == [2, 12, 64, 9]
    assert shapes[("mlp_up", "H")] == [2, 9, 3072]
    assert shapes[("pooler", "pooled")] == [2, 768]
    assert steps["tokens"].shown[0].tensor.tolist() == SEED_IDS
    # The three padding keys of the first sentence get exactly zero attention in every head.
    pattern = steps["softmax"].shown[0].tensor
    assert torch.all(pattern[0, :, :, 6:] == 0) and torch.all(pattern[1] > 0)
    assert trace.batch_tokens[0][:6] == ["[CLS]", "I", "love", "cats", "!", "[SEP]"]


def test_preview_holds_item_and_head_and_shows_minus_infinity(tiny_models_loaded):
    trace = tiny_models_loaded["gpt2"].run(list(PAIR), keep=None)
    step = next(s for s in walkthrough(trace, 0) if s.key == "mask")
    masked = step.shown[1]
    pv = preview(masked, {"batch": 1, "heads": 2}, rows=3, cols=4)
    assert pv.fixed == {"batch": 1, "heads": 2} and pv.values.shape == (3, 4)
    real = masked.tensor[1, 2, :3, :4].numpy()
    assert np.array_equal(np.isneginf(pv.values), real < -1e30)  # upper triangle
    assert np.allclose(pv.values[np.isfinite(pv.values)], real[real > -1e30])
    assert (pv.row_dim, pv.col_dim, pv.n_rows) == ("q_pos", "k_pos", trace.n_tokens)


def test_a_decoder_shows_its_padding_and_causal_masks_together(tiny_models_loaded, minilm):
    trace = tiny_models_loaded["gpt2"].run(list(PAIR), keep=None)  # padded: different lengths
    step = next(s for s in walkthrough(trace, 0) if s.key == "attention_mask")
    assert "causal" in step.title.lower() and step.figure == "allowed"
    padding, both = step.shown
    assert torch.equal(padding.tensor, trace.attention_mask)
    n, lengths = trace.n_tokens, trace.attention_mask.sum(1)
    j = torch.arange(n)
    for b in range(2):  # 1 where key j is not after query i and is a real token
        expected = (j[None, :] <= j[:, None]) & (j[None, :] < lengths[b])
        assert torch.equal(both.tensor[b].bool(), expected)
    # the encoder keeps its one padding mask, shown with the token table
    encoder = next(s for s in walkthrough(minilm.run("Hi there.", keep=None), 0)
                   if s.key == "attention_mask")
    assert len(encoder.shown) == 1 and encoder.figure == "tokens"


def test_no_step_says_our_internal_words(tiny_models_loaded, minilm):
    for trace in (tiny_models_loaded["gpt2"].run("Hi there.", keep=None),
                  minilm.run("Hi there.", keep=None)):
        for step in walkthrough(trace, 0):
            text = " ".join([step.title, step.summary, step.teacher])
            assert "seed 0" not in text.lower(), (step.key, text)


def test_walkthrough_refuses_a_partial_trace_and_a_bad_layer(minilm):
    partial = minilm.run("Hello there.", keep=lambda name: "hook_pattern" in name)
    with pytest.raises(ValueError, match="full trace"):
        walkthrough(partial, 0)
    with pytest.raises(ValueError, match="layer"):
        walkthrough(minilm.run("Hello there.", keep=None), minilm.cfg.n_layers)


# ------------------------------------------------------------------------------ figures
def test_token_table_escapes_tokens_and_greys_padding():
    fig = token_table([["<b>x</b>", "ok"], ["a", "[PAD]"]], [[5, 6], [7, 0]], [[1, 1], [1, 0]],
                      [[0, 0], [0, 0]])
    cells = fig.data[0].cells.values
    assert cells[0][0] == "0·&lt;b&gt;x&lt;/b&gt;" and "<b>" not in json.dumps(fig.to_dict())
    assert cells[5] == [7, 0] and cells[6] == [1, 0]  # text 2: ids and mask
    assert fig.data[0].cells.fill.color[5][1] != "white"  # padding row of text 2 is grey
    with pytest.raises(ValueError, match="shape"):
        token_table([["a"]], [[1]], [[1, 1]])


def test_mask_and_scores_figures_mark_the_blocked_cells():
    blocked = float(np.finfo(np.float32).min)
    bias = np.triu(np.full((4, 4), blocked, dtype=np.float32), k=1)
    fig = mask_matrix(bias, ["a", "b", "c", "d"])
    assert (np.array(fig.data[0].text) == "−∞").sum() == 6
    scores = np.arange(16, dtype=np.float32).reshape(4, 4) + bias
    z = np.array(scores_heatmap(scores, ["a", "b", "c", "d"], "s").data[0].z, dtype=float)
    assert np.isnan(z).sum() == 6 and z[3, 0] == 12
    with pytest.raises(ValueError, match="rows = queries"):
        scores_heatmap(np.zeros((3, 4)), ["a", "b", "c"], "s")


def test_minus_infinity_is_the_same_grey_in_the_mask_and_in_the_scores():
    blocked = float(np.finfo(np.float32).min)
    bias = np.triu(np.full((4, 4), blocked, dtype=np.float32), k=1)
    mask = mask_matrix(bias, list("abcd"))
    scores = scores_heatmap(np.ones((4, 4), np.float32) + bias, list("abcd"), "s")
    assert mask.data[0].colorscale[-1][1] == MASKED_GREY  # the −∞ cells
    assert scores.layout.plot_bgcolor == MASKED_GREY  # NaN cells show the background
    assert np.isnan(np.array(scores.data[0].z, dtype=float)).sum() == 6


def test_allowed_matrix_says_why_a_cell_is_blocked():
    fig = allowed_matrix([1, 1, 1, 0], list("abcd"), causal=True)
    text, why = np.array(fig.data[0].text), np.array(fig.data[0].customdata)
    assert text[2, 1] == "1" and text[1, 2] == "0" and text[3, 3] == "0"
    assert "causal" in why[1, 2] and "padding" in why[3, 3] and "may attend" in why[3, 2]
    assert "padding" in fig.layout.title.subtitle.text
    with pytest.raises(ValueError, match="one entry per token"):
        allowed_matrix([1, 1], list("abc"))


def test_values_heatmap_caps_columns_and_bars_are_ordered():
    fig = values_heatmap(np.ones((3, 500)), ["a", "b", "c"], "x")
    assert np.array(fig.data[0].z).shape == (3, MAX_VALUE_COLUMNS)
    assert "first 128 of 500" in fig.layout.title.subtitle.text
    z = np.zeros((2, 200), dtype=np.float32)
    z[0, :100], z[1, 0] = 1.0, 50.0  # one outlier does not set the colour range
    assert values_heatmap(z, ["a", "b"], "x").data[0].zmax == pytest.approx(1.0)
    bars = top_tokens_bar(["Ġthe", "<eos>"], [0.7, 0.2], "next")
    assert list(bars.data[0].y) == ["1. ␣the", "2. &lt;eos&gt;"]  # ranked from 1, escaped
    with pytest.raises(ValueError):
        top_tokens_bar(["a"], [0.5, 0.5], "next")


def test_an_attention_only_model_walks_through_attention_and_no_feed_forward_part():
    """tiny-induction has no MLP: its layers end after the attention output, and no step
    reads a feed-forward hook it does not have."""
    from model import load_model

    lm = load_model("tiny-induction")
    assert lm.cfg.attn_only
    steps = walkthrough(lm.run("abcabc"), lm.cfg.n_layers - 1)
    keys = [s.key for s in steps]
    assert "attn_out" in keys and "softmax" in keys
    assert not {"mlp_up", "mlp_act", "mlp_down", "ln2"} & set(keys)
    assert not any("mlp" in shown.source for s in steps for shown in s.shown)
