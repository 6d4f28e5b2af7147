"""Unit tests for analysis/projection.py and viz/projection.py: PCA against scikit-learn, the
embedding sum against the model's own hooks and weights, batched token points, the joint
query/key projection, the size bounds, and the figures' checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.decomposition import PCA

from analysis.projection import (
    MAX_POINTS, ProjectionRefused, balance_queries_keys, check_size, embedding_parts, joint_qk,
    pca, project, project_layers, query_key_vectors, token_points,
)
from viz.projection import MAX_CATEGORIES, joint_qk_figure, projection_figure

TEXT = "The cat sat on the mat. A dog chased the ball across the park!"


@pytest.fixture(scope="module")
def minilm_trace(minilm):
    return minilm.run(TEXT)


def _same_up_to_sign(ours: np.ndarray, theirs: np.ndarray, atol: float) -> None:
    for j in range(ours.shape[1]):
        sign = np.sign(ours[:, j] @ theirs[:, j]) or 1.0
        np.testing.assert_allclose(ours[:, j], sign * theirs[:, j], atol=atol)


# ------------------------------------------------------------------------------- PCA
@pytest.mark.parametrize("k", [2, 3])
def test_pca_of_all_layers_equals_sklearn(minilm_trace, k):
    states = minilm_trace.hidden_states.numpy()  # [layer, pos, d_model]
    flat = states.reshape(-1, states.shape[-1]).astype(np.float64)  # [layer * pos, d_model]
    sk = PCA(n_components=k, svd_solver="full").fit(flat)
    ours = pca(flat, k)
    # both are exact float64 decompositions of the same data: agreement to ~1e-9 relative
    _same_up_to_sign(ours.coords, sk.transform(flat), atol=1e-6)
    np.testing.assert_allclose(ours.explained, sk.explained_variance_ratio_, rtol=1e-8)
    coords, explained = project_layers(states, "PCA", k)
    assert coords.shape == (states.shape[0], states.shape[1], k)
    np.testing.assert_allclose(coords.reshape(-1, k), ours.coords, atol=1e-9)
    np.testing.assert_allclose(explained, ours.explained)


def test_pca_with_fewer_points_than_dimensions_equals_sklearn():
    x = np.random.default_rng(1).normal(size=(12, 40))
    _same_up_to_sign(pca(x, 3).coords, PCA(3).fit_transform(x), atol=1e-9)
    one_layer, _ = project_layers(x[None], "PCA", 2, layer=0)
    _same_up_to_sign(one_layer, PCA(2).fit_transform(x), atol=1e-9)


def test_pca_is_deterministic_and_pads_missing_components():
    x = np.random.default_rng(2).normal(size=(30, 5))
    a, b = pca(x, 2), pca(x[::-1].copy(), 2)
    np.testing.assert_allclose(a.components, b.components, atol=1e-12)  # same signs
    two = pca(np.array([[0.0, 1.0], [2.0, 3.0]]), 3)  # 2 points: one direction of variance
    assert two.coords.shape == (2, 3) and np.all(two.coords[:, 1:] == 0)
    assert two.explained[0] == pytest.approx(1.0)


# ------------------------------------------------------------------------------ bounds
def test_tsne_and_umap_are_refused_above_and_below_their_bounds():
    check_size("PCA", 10**6)  # PCA has no bound
    for method, bound in MAX_POINTS.items():
        check_size(method, bound)
        with pytest.raises(ProjectionRefused, match=f"{bound:,}"):
            check_size(method, bound + 1)
        with pytest.raises(ProjectionRefused, match="at least"):
            check_size(method, 3)
    with pytest.raises(ProjectionRefused):
        project(np.zeros((MAX_POINTS["t-SNE"] + 1, 4)), "t-SNE")
    with pytest.raises(ValueError, match="method"):
        check_size("MDS", 10)


def test_a_view_too_big_for_tsne_is_pointed_to_umap_only_when_umap_takes_it():
    with pytest.raises(ProjectionRefused, match="UMAP takes up to 4,000") as refused:
        check_size("t-SNE", 3584)  # 512 tokens x 7 layers
    assert "UMAP is limited" not in str(refused.value)
    with pytest.raises(ProjectionRefused) as refused:
        check_size("t-SNE", MAX_POINTS["UMAP"] + 1)
    assert "UMAP takes" not in str(refused.value)


def test_tsne_runs_and_keeps_a_fixed_seed():
    x = np.random.default_rng(3).normal(size=(40, 8))
    a, b = project(x, "t-SNE", 2), project(x, "t-SNE", 2)
    assert a.shape == (40, 2) and np.array_equal(a, b)


# ------------------------------------------------------------------ the embedding sum
def test_minilm_parts_add_up_to_the_traces_sum_and_are_weight_rows(minilm, minilm_trace):
    parts = embedding_parts(minilm_trace)
    assert list(parts.parts) == ["token", "token type", "position"]
    cache = minilm_trace.cache
    # the model adds (token + type) + position; the same additions give the same bits
    total = (parts.parts["token"] + parts.parts["token type"]) + parts.parts["position"]
    assert np.array_equal(total, cache["embed.hook_sum"][0].numpy())
    assert np.array_equal(parts.total, cache["embed.hook_sum"][0].numpy())
    embed = minilm.model.embed
    ids, types = minilm_trace.input_ids[0], minilm_trace.token_type_ids[0]
    assert np.array_equal(parts.parts["token"], embed.W_E.weight[ids].detach().numpy())
    assert np.array_equal(parts.parts["token type"], embed.W_type.weight[types].detach().numpy())
    n = minilm_trace.n_tokens
    assert np.array_equal(parts.parts["position"], embed.W_pos.weight[:n].detach().numpy())
    ln = F.layer_norm(torch.from_numpy(parts.total), (384,), embed.ln.weight, embed.ln.bias,
                      embed.ln.eps)
    torch.testing.assert_close(torch.from_numpy(parts.normed), ln.detach(), rtol=0, atol=1e-6)
    assert np.array_equal(parts.normed, cache["blocks.0.hook_resid_pre"][0].numpy())
    assert parts.shapes["embed.hook_sum"] == (1, n, 384)
    norms = parts.norms()
    np.testing.assert_allclose(norms["position"], np.linalg.norm(parts.parts["position"], axis=1))
    assert list(norms)[-2:] == ["sum", "after LayerNorm"]


def test_parts_of_decoders(tiny_models_loaded):
    gpt2 = tiny_models_loaded["gpt2"].run(TEXT)
    parts = embedding_parts(gpt2)
    assert list(parts.parts) == ["token", "position"] and parts.normed is None
    assert np.array_equal(parts.parts["token"] + parts.parts["position"], parts.total)
    llama = embedding_parts(tiny_models_loaded["llama"].run(TEXT))
    assert list(llama.parts) == ["token"] and llama.hooks["sum"] == "embed.hook_tok"


# ------------------------------------------------------------------------ token points
def test_batched_points_skip_padding_and_match_single_runs(minilm):
    texts = ["A short one.", "The cat sat on the mat and looked at the dog."]
    batch = token_points(minilm.run(texts))
    singles = [minilm.run(t) for t in texts]
    assert len(batch.tokens) == sum(s.n_tokens for s in singles)
    start = 0
    for s, single in enumerate(singles):
        n = single.n_tokens
        assert batch.tokens[start:start + n] == single.tokens
        assert list(batch.positions[start:start + n]) == list(range(n))
        assert set(batch.sentence[start:start + n]) == {s}
        # padding changes nothing for real tokens but the order of float sums
        np.testing.assert_allclose(batch.states[:, start:start + n],
                                   single.hidden_states.numpy(), atol=2e-4)
        start += n


# ------------------------------------------------------------- queries and keys together
def test_query_key_vectors_reproduce_the_pattern(tiny_models_loaded):
    """Rotary + grouped-query attention: the q and k returned are the ones the model dotted."""
    lm = tiny_models_loaded["llama"]
    trace = lm.run(TEXT)
    q, k, pattern = query_key_vectors(trace, layer=1, head=3)
    scores = torch.from_numpy(q @ k.T) / np.sqrt(lm.cfg.d_head)  # [q_pos, k_pos]
    causal = torch.ones_like(scores, dtype=torch.bool).tril()
    again = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    torch.testing.assert_close(again, torch.from_numpy(pattern), rtol=0, atol=1e-5)


def test_joint_projection_and_balance(minilm_trace):
    q, k, pattern = query_key_vectors(minilm_trace, layer=2, head=5)
    joint = joint_qk(q, k, pattern)
    assert np.array_equal(joint.top_key, pattern.argmax(axis=1))
    sk = PCA(2).fit_transform(np.vstack([q, k]).astype(np.float64))
    _same_up_to_sign(np.vstack([joint.q, joint.k]), sk, atol=1e-6)
    qb, kb = balance_queries_keys(q.astype(np.float64), k.astype(np.float64))
    soft = torch.from_numpy(q.astype(np.float64) @ k.T.astype(np.float64)).softmax(-1)
    torch.testing.assert_close(torch.from_numpy(qb @ kb.T).softmax(-1), soft)
    assert np.linalg.norm(qb, axis=1).mean() == pytest.approx(np.linalg.norm(kb, axis=1).mean())


# ------------------------------------------------------------------------------- viz
def test_projection_figure_groups_escapes_and_checks():
    n = MAX_CATEGORIES + 10
    coords = np.random.default_rng(4).normal(size=(n, 2))
    labels = [f"{i}·&lt;t{i}&gt;" for i in range(n)]
    fig = projection_figure(coords, labels, [f"<t{i}>" for i in range(n)], "token", "title",
                            categorical=True)
    assert len(fig.data) == MAX_CATEGORIES and fig.data[-1].name.startswith("other (11")
    assert all("<t" not in trace.name for trace in fig.data)  # category names are escaped
    fig = projection_figure(coords[:5], labels[:5], np.arange(5), "position", "t",
                            path=coords[:3], path_names=["L0", "L1", "L2"], path_title="p")
    assert list(fig.data[-1].text) == ["L0", "L1", "L2"]
    with pytest.raises(ValueError):
        projection_figure(coords[:5], labels[:4], np.arange(5), "position", "t")
    with pytest.raises(ValueError, match="path"):
        projection_figure(coords[:5], labels[:5], np.arange(5), "position", "t",
                          path=np.zeros((3, 3)))


def test_joint_figure_draws_one_line_per_query():
    q = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    k = q + 5
    fig = joint_qk_figure(q, k, np.array([2, 0, 0]), ["0·a", "1·b", "2·c"], "t")
    xs = np.asarray(fig.data[0].x, dtype=float)
    assert list(xs[0::3]) == [0.0, 1.0, 0.0] and list(xs[1::3]) == [5.0, 5.0, 5.0]
    with pytest.raises(ValueError, match="top_key"):
        joint_qk_figure(q, k, np.array([3, 0, 0]), ["a", "b", "c"], "t")
