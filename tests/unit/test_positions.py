"""Unit tests for analysis/positions.py and viz/positions.py: the sinusoidal formula, the loaded
model's own position vectors (checked against its weights and its own forward pass), the
similarities, and rotary's relative distances."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analysis.positions import (
    model_positions, position_similarity, rotary_inv_freq, rotary_qk_by_distance,
    similarity_by_distance, sinusoidal_frequencies, sinusoidal_table, wavelengths,
)
from viz.positions import (
    dimension_curves, position_heatmap, position_pca_figure, similarity_heatmap,
)


# ------------------------------------------------------------------------ sinusoidal
@pytest.mark.parametrize("n_pos, d_model", [(50, 384), (17, 8), (9, 7)])
def test_sinusoidal_values_equal_the_formula(n_pos, d_model):
    table = sinusoidal_table(n_pos, d_model).numpy()  # [pos, d_model]
    assert table.shape == (n_pos, d_model)
    for pos in range(n_pos):
        for dim in range(d_model):
            i = dim // 2
            angle = pos / 10000 ** (2 * i / d_model)
            expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
            assert table[pos, dim] == pytest.approx(expected, abs=1e-6), (pos, dim)


def test_frequencies_fall_along_the_dimension():
    freq = sinusoidal_frequencies(384).numpy()  # [192]
    assert freq.shape == (192,)
    assert freq[0] == 1.0 and np.all(np.diff(freq) < 0)
    assert freq[-1] == pytest.approx(10000 ** (-382 / 384))
    assert wavelengths(sinusoidal_frequencies(384))[0].item() == pytest.approx(2 * math.pi)


# ----------------------------------------------------------------- the model's own table
def test_minilm_table_is_the_checkpoint_weight_exactly(minilm):
    from safetensors import safe_open

    from model.registry import BUNDLED

    table = model_positions(minilm.model)
    weight = minilm.model.embed.W_pos.weight
    assert table.kind == "learned" and table.table.shape == (512, 384)
    assert table.table.data_ptr() == weight.data_ptr()  # a view of the parameter, not a copy
    assert table.n_parameters == 512 * 384
    path = BUNDLED["minilm"]() / "model.safetensors"
    with safe_open(str(path), "pt") as f:  # the file itself, not our conversion of it
        stored = f.get_tensor("embeddings.position_embeddings.weight")
    assert torch.equal(table.table, stored.float())
    assert torch.equal(model_positions(minilm.model, 100).table, stored[:100].float())


@pytest.mark.parametrize("family", ["roberta", "gpt2", "bert"])
def test_table_rows_are_what_the_forward_pass_adds(tiny_models_loaded, family):
    """Row p of the table is the vector the model really added at position p (RoBERTa
    numbers its positions from padding_idx + 1: the table must skip those rows)."""
    lm = tiny_models_loaded[family]
    trace = lm.run("The cat sat on the mat.")
    added = trace.cache["embed.hook_pos"][0]  # [pos, d_model]
    table = model_positions(lm.model, trace.n_tokens).table  # [pos, d_model]
    assert torch.equal(added, table)
    offset = lm.cfg.position_offset
    assert (offset > 0) == (family == "roberta")
    assert torch.equal(table, lm.model.embed.W_pos.weight[offset:offset + trace.n_tokens])


def test_sinusoidal_model_uses_the_formula_table():
    from model.config import TransformerConfig
    from model.transformer import HookedTransformer

    cfg = TransformerConfig(family="own", d_model=16, n_heads=2, n_layers=1, n_ctx=24,
                            d_vocab=10, d_mlp=32, positions="sinusoidal", embed_scale=True)
    table = model_positions(HookedTransformer(cfg), 20)
    assert table.kind == "sinusoidal" and table.n_parameters == 0
    assert torch.equal(table.table, sinusoidal_table(20, 16))


def test_bounds_of_the_table_are_checked(minilm):
    with pytest.raises(ValueError, match="n_pos"):
        model_positions(minilm.model, 513)


# ------------------------------------------------------------------------ similarity
def test_similarities_and_their_decay():
    table = torch.randn(12, 6, generator=torch.Generator().manual_seed(0))
    dot = position_similarity(table, "dot")
    cos = position_similarity(table, "cosine")
    torch.testing.assert_close(dot, table.double() @ table.double().T)
    torch.testing.assert_close(torch.diagonal(cos), torch.ones(12, dtype=torch.float64))
    norms = table.double().norm(dim=1)
    torch.testing.assert_close(cos, dot / torch.outer(norms, norms))
    decay = similarity_by_distance(cos)
    for d in (0, 1, 5, 11):
        pairs = [cos[m, m + d].item() for m in range(12 - d)]
        assert decay[d].item() == pytest.approx(sum(pairs) / len(pairs))
    with pytest.raises(ValueError):
        position_similarity(table, "euclid")


def test_sinusoidal_neighbours_are_more_alike_than_distant_positions():
    decay = similarity_by_distance(position_similarity(sinusoidal_table(128, 128), "cosine"))
    assert decay[0] == pytest.approx(1.0)
    assert decay[1] > decay[8] > decay[64]


# --------------------------------------------------------------------------- rotary
def test_rotary_frequencies_are_the_models_buffer(tiny_models_loaded):
    lm = tiny_models_loaded["llama"]
    d_head, theta = lm.cfg.d_head, lm.cfg.rope_theta
    inv = rotary_inv_freq(lm.model)
    expected = torch.tensor([theta ** (-2 * i / d_head) for i in range(d_head // 2)])
    torch.testing.assert_close(inv, expected)
    for block in lm.model.blocks:
        assert torch.equal(block.attn.rotary.inv_freq, inv)
    table = model_positions(lm.model, 20)
    assert table.kind == "rotary" and table.n_parameters == 0
    pos = torch.arange(20, dtype=torch.float32)[:, None]  # [pos, 1]
    torch.testing.assert_close(table.table, torch.cat([torch.cos(pos * inv), torch.sin(pos * inv)],
                                                      dim=-1))
    with pytest.raises(ValueError, match="rotary"):
        rotary_inv_freq(tiny_models_loaded["gpt2"].model)


def test_rotary_qk_depends_only_on_distance_and_matches_the_model(tiny_models_loaded):
    """For every query m and key n <= m in a real run, the model's rotated q·k equals the
    curve at distance m - n, computed from the unrotated q and k."""
    lm = tiny_models_loaded["llama"]
    trace = lm.run("Attention lets every token look at every other token.")
    n = trace.n_tokens
    layer, head = 1, 3
    kv_head = head // (lm.cfg.n_heads // lm.cfg.n_kv_heads)
    q = trace.cache[f"blocks.{layer}.attn.hook_q"][0, head]  # [pos, d_head]
    k = trace.cache[f"blocks.{layer}.attn.hook_k"][0, kv_head]  # [pos, d_head]
    qk = trace.cache[f"blocks.{layer}.attn.hook_qk"][0, head]  # [q_pos, k_pos]
    for key in (0, 2, n - 1):
        for query in range(key, n):
            curve = rotary_qk_by_distance(q[query], k[key], lm.model, n)  # [n]
            assert curve[query - key].item() == pytest.approx(qk[query, key].item(), abs=1e-4)
    # the curve is not trivially q·k: the model's q really was rotated before the dot product
    rot_q = trace.cache[f"blocks.{layer}.attn.hook_rot_q"][0, head]
    assert not torch.allclose(rot_q[1], q[1])  # rotation really happened


# ------------------------------------------------------------------------------- viz
def test_heatmap_carries_the_exact_table_and_checks_shapes():
    table = sinusoidal_table(10, 8)
    fig = position_heatmap(table, "t")
    assert np.array_equal(np.asarray(fig.data[0].z), table.numpy())
    assert fig.data[0].zmin == -fig.data[0].zmax
    order = [0, 2, 4, 6, 1, 3, 5, 7]
    fig = position_heatmap(table[:, order], "grouped", dim_labels=order)
    assert list(fig.data[0].x) == [str(d) for d in order]
    with pytest.raises(ValueError, match="dim_labels"):
        position_heatmap(table, "t", dim_labels=[0, 1])
    with pytest.raises(ValueError, match="dimensions"):
        dimension_curves(table, [0, 9], "t")
    with pytest.raises(ValueError, match="square"):
        similarity_heatmap(np.zeros((3, 4)), "t")


def test_outlier_row_does_not_wash_out_the_colours():
    table = np.full((300, 20), 0.05, dtype=np.float32)
    table[0] = 2.0  # like BERT's position 0: one row in 300, far from the rest
    fig = position_heatmap(table, "t")
    assert fig.data[0].zmax < 2.0 and "clipped" in fig.data[0].colorbar.title.text
    assert np.asarray(fig.data[0].z).max() == 2.0  # the numbers themselves are untouched


def test_pca_figure_is_labelled_with_real_positions():
    coords = np.random.default_rng(0).normal(size=(6, 2))
    fig = position_pca_figure(coords, np.array([0.5, 0.2]), "t", first=1)
    assert list(fig.data[0].customdata) == [1, 2, 3, 4, 5, 6]
    assert "50.0%" in fig.layout.xaxis.title.text
    with pytest.raises(ValueError):
        position_pca_figure(coords, np.array([0.5]), "t")


def test_similarity_falls_with_distance_for_the_formula_but_not_for_unrelated_positions():
    """The sinusoidal table's neighbours are more alike than far positions; a table whose
    rows are random directions (as a model trained on random symbols learns) is not."""
    from analysis.positions import falls_with_distance

    sin = similarity_by_distance(position_similarity(sinusoidal_table(48, 64), "cosine"))
    assert falls_with_distance(sin)
    torch.manual_seed(0)
    rows = torch.randn(48, 64)  # [pos, d_model]
    random = similarity_by_distance(position_similarity(rows, "cosine"))
    assert not falls_with_distance(random)
