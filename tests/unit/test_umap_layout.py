"""Our UMAP (analysis/umap_layout.py): the same neighbour graph as umap-learn, a layout that
keeps neighbours together, a fixed seed, and odd inputs (pieces, duplicates, few points)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import umap_layout
from analysis.projection import project, project_layers


def _clusters(n_per: int = 60, k: int = 5, d: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=10.0, size=(k, d))
    x = np.concatenate([c + rng.normal(size=(n_per, d)) for c in centres])  # [k * n_per, d]
    return x, np.repeat(np.arange(k), n_per)


def test_nearest_neighbors_are_exact():
    from sklearn.neighbors import NearestNeighbors

    x = np.random.default_rng(1).normal(size=(300, 16))
    idx, dist = umap_layout.nearest_neighbors(x, 15)
    ref_dist, ref_idx = NearestNeighbors(n_neighbors=15).fit(x).kneighbors(x)
    assert np.array_equal(idx[:, 0], np.arange(300)) and np.all(dist[:, 0] == 0)
    np.testing.assert_allclose(dist, ref_dist, atol=1e-6)  # sklearn: itself at ~1e-7
    assert (idx == ref_idx).mean() > 0.999  # equal up to exact ties


def test_the_fuzzy_graph_equals_umap_learns():
    pytest.importorskip("umap")  # the reference (slow to import the first time: numba)
    from umap.umap_ import fuzzy_simplicial_set

    x, _ = _clusters(40, 4, 12, seed=2)
    idx, dist = umap_layout.nearest_neighbors(x, 15)
    ref, ref_sigma, ref_rho = fuzzy_simplicial_set(x, 15, np.random.RandomState(0), "euclidean",
                                                   knn_indices=idx, knn_dists=dist)
    sigma, rho = umap_layout.smooth_knn_dist(dist, 15)
    np.testing.assert_allclose(rho, ref_rho, rtol=1e-6)
    np.testing.assert_allclose(sigma, ref_sigma, rtol=1e-4)  # bisection stops at 1e-5
    ours = umap_layout.fuzzy_graph(x, 15)
    np.testing.assert_allclose(ours.toarray(), ref.toarray(), atol=1e-4)
    assert ours.nnz == ref.nnz


def test_layout_keeps_neighbours_together():
    from sklearn.manifold import trustworthiness
    from sklearn.neighbors import KNeighborsClassifier

    x, label = _clusters()
    y = umap_layout.umap(x, 2, seed=0)
    assert y.shape == (300, 2) and np.isfinite(y).all()
    assert trustworthiness(x, y, n_neighbors=10) > 0.9
    knn = KNeighborsClassifier(5).fit(y, label)
    assert knn.score(y, label) > 0.97  # clusters stay apart in the picture
    shuffled = np.random.default_rng(0).permutation(y)  # the same points, neighbours lost
    assert trustworthiness(x, shuffled, n_neighbors=10) < 0.7


def test_fixed_seed_and_three_dimensions():
    x, _ = _clusters(30, 3, 10, seed=4)
    a, b = project(x, "UMAP", 2, seed=0), project(x, "UMAP", 2, seed=0)
    assert np.array_equal(a, b)
    assert not np.allclose(a, project(x, "UMAP", 2, seed=1))
    assert project(x, "UMAP", 3).shape == (90, 3)


def test_graph_in_pieces_duplicates_and_few_points():
    far = np.concatenate([np.zeros((20, 4)), np.full((20, 4), 1e3)])  # two pieces, duplicates
    far += np.random.default_rng(5).normal(scale=1e-3, size=far.shape) * (np.arange(40) % 2)[:, None]
    y = project(far, "UMAP", 2)
    assert np.isfinite(y).all() and y.shape == (40, 2)
    assert np.isfinite(project(np.random.default_rng(6).normal(size=(5, 3)), "UMAP", 2)).all()
    states = np.random.default_rng(7).normal(size=(3, 12, 8))  # [layer, point, d]
    coords, explained = project_layers(states, "UMAP", 2)
    assert coords.shape == (3, 12, 2) and explained is None
