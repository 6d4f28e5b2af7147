"""UMAP (McInnes, Healy & Melville, 2018) written with numpy, scipy and torch.

umap-learn is the reference, but on a fresh server its numba code compiles first: 34 s for
`import umap` and 91 s for the first projection of 3,584 points on 2 cores. This is the
same algorithm with umap-learn's defaults (15 neighbours, min_dist 0.1, spread 1, 500
epochs below 10,000 points, 5 negative samples per edge, spectral initialisation):

1. exact k nearest neighbours (euclidean) from one matrix product;
2. each point's fuzzy neighbourhood: rho = distance to its nearest neighbour, sigma found
   by bisection so that sum_j exp(-(d_ij - rho) / sigma) = log2(k);
3. the fuzzy union of the two directions, P = A + Aᵀ - A∘Aᵀ;
4. the layout: spectral initialisation from the graph's normalised Laplacian (each piece
   on its own when the graph falls apart, as umap-learn does), then
   stochastic gradient descent on UMAP's cross-entropy, each edge sampled in proportion to
   its weight, with negative samples drawn at random.

One difference: umap-learn updates the points one edge at a time; here all edges due in an
epoch are applied together from the same positions (vectorised). The bench compares the
two by scikit-learn's trustworthiness (bench/bench_projection.py).
"""

from __future__ import annotations

import numpy as np

# umap-learn's find_ab_params(spread=1.0, min_dist=0.1): the curve 1 / (1 + a d^(2b))
A, B = 1.5769434603113077, 0.8950608781227859
N_NEIGHBORS = 15
NEGATIVE_RATE = 5
SMOOTH_K_TOLERANCE = 1e-5
MIN_K_DIST_SCALE = 1e-3


def nearest_neighbors(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours, each point first (itself, at distance 0).
    x: [n, d] -> (indices [n, k], distances [n, k]), nearest first.

    Candidates come from float32 distances (one matrix product); the k + 8 best of each
    point are measured again in float64 and the k nearest kept."""
    n = x.shape[0]
    c = min(n, k + 8)
    x32 = x.astype(np.float32)
    sq = (x32 * x32).sum(1)  # [n]
    d2 = sq[:, None] + sq[None, :] - 2.0 * (x32 @ x32.T)  # [n, n]
    np.fill_diagonal(d2, -1.0)  # itself first, whatever the rounding
    cand = np.argpartition(d2, c - 1, axis=1)[:, :c] if c < n else \
        np.broadcast_to(np.arange(n), (n, n)).copy()  # [n, c]
    exact = np.empty(cand.shape)  # [n, c], float64
    for lo in range(0, n, 256):  # in blocks: the gathered rows are [256, c, d]
        rows = slice(lo, lo + 256)
        exact[rows] = ((x[cand[rows]] - x[rows, None, :]) ** 2).sum(-1)
    exact[cand == np.arange(n)[:, None]] = -1.0
    order = np.argsort(exact, axis=1, kind="stable")[:, :k]
    idx, dist = np.take_along_axis(cand, order, 1), np.take_along_axis(exact, order, 1)
    dist[:, 0] = 0.0
    return idx, np.sqrt(np.maximum(dist, 0.0))


def smooth_knn_dist(dist: np.ndarray, k: int, n_iter: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """umap-learn's smooth_knn_dist (local_connectivity 1), every point at once.
    dist: [n, k] with column 0 the point itself -> (sigma [n], rho [n])."""
    n = dist.shape[0]
    target = np.log2(k)
    positive = np.where(dist > 0, dist, np.inf)
    rho = positive.min(axis=1)  # [n], nearest non-zero distance
    rho[~np.isfinite(rho)] = 0.0
    lo, hi, mid = np.zeros(n), np.full(n, np.inf), np.ones(n)
    active = np.ones(n, dtype=bool)
    d = dist[:, 1:] - rho[:, None]  # [n, k-1]
    for _ in range(n_iter):
        psum = np.where(d > 0, np.exp(-np.maximum(d, 0) / mid[:, None]), 1.0).sum(1)  # [n]
        active &= np.abs(psum - target) >= SMOOTH_K_TOLERANCE
        if not active.any():
            break
        above = active & (psum > target)
        below = active & ~(psum > target)
        hi = np.where(above, mid, hi)
        lo = np.where(below, mid, lo)
        mid = np.where(above, (lo + hi) / 2.0, mid)
        mid = np.where(below, np.where(np.isinf(hi), mid * 2.0, (lo + hi) / 2.0), mid)
    floor = MIN_K_DIST_SCALE * np.where(rho > 0, dist.mean(axis=1), dist.mean())
    return np.maximum(mid, floor), rho


def fuzzy_graph(x: np.ndarray, k: int):
    """UMAP's fuzzy simplicial set of x [n, d]: a symmetric scipy COO matrix [n, n]."""
    import scipy.sparse

    n = x.shape[0]
    idx, dist = nearest_neighbors(x, k)
    sigma, rho = smooth_knn_dist(dist, k)
    d = dist - rho[:, None]
    vals = np.where(d <= 0, 1.0, np.exp(-np.maximum(d, 0) / sigma[:, None]))  # [n, k]
    vals[idx == np.arange(n)[:, None]] = 0.0  # no edge to itself
    a = scipy.sparse.csr_matrix((vals.ravel(), (np.repeat(np.arange(n), k), idx.ravel())),
                                shape=(n, n))
    a.eliminate_zeros()
    at = a.T.tocsr()
    graph = (a + at - a.multiply(at)).tocoo()
    graph.sum_duplicates()
    return graph


def _laplacian_eigenvectors(graph, dim: int) -> np.ndarray | None:
    """The dim eigenvectors after the first of a connected graph's normalised Laplacian,
    [n, dim] (umap-learn's spectral_layout); None if the solver fails."""
    import scipy.sparse
    import scipy.sparse.linalg

    n = graph.shape[0]
    sqrt_deg = np.sqrt(np.asarray(graph.sum(axis=0)).ravel())
    d = scipy.sparse.diags(1.0 / sqrt_deg)
    lap = scipy.sparse.identity(n) - d @ graph @ d
    k = dim + 1
    try:
        values, vectors = scipy.sparse.linalg.eigsh(
            lap, k, which="SM", ncv=max(2 * k + 1, int(np.sqrt(n))), tol=1e-4,
            v0=np.ones(n), maxiter=n * 5)
    except scipy.sparse.linalg.ArpackError:
        return None
    return vectors[:, np.argsort(values)[1:k]]


def spectral_init(graph, dim: int, rng: np.random.Generator, x: np.ndarray) -> np.ndarray | None:
    """umap-learn's spectral initialisation, [n, dim]. A graph in pieces is laid out like
    umap-learn's multi_component_layout: each piece by its own eigenvectors, around a
    position of its own (± unit vectors for up to 2·dim pieces, else the PCA of the pieces'
    centres in x [n, d]). None when the solver fails (the caller then starts from PCA)."""
    import scipy.sparse.csgraph

    graph = graph.tocsr()
    n_parts, labels = scipy.sparse.csgraph.connected_components(graph)
    if n_parts == 1:
        return _laplacian_eigenvectors(graph, dim) if graph.shape[0] > dim + 2 else None
    if n_parts <= 2 * dim:
        half = int(np.ceil(n_parts / 2))
        base = np.hstack([np.eye(half), np.zeros((half, dim - half))])
        meta = np.vstack([base, -base])[:n_parts]  # [part, dim]
    else:
        centres = np.stack([x[labels == p].mean(0) for p in range(n_parts)])
        centres -= centres.mean(0)
        meta = centres @ np.linalg.svd(centres, full_matrices=False)[2][:dim].T  # [part, dim]
        meta /= max(np.abs(meta).max(), 1e-12)
    out = np.empty((graph.shape[0], dim))
    for p in range(n_parts):
        rows = np.flatnonzero(labels == p)
        others = np.delete(meta, p, axis=0)
        gaps = np.linalg.norm(others - meta[p], axis=1)
        reach = gaps[gaps > 0].min() / 2 if (gaps > 0).any() else 1.0
        part = None
        if len(rows) >= 2 * dim and len(rows) > dim + 2:
            part = _laplacian_eigenvectors(graph[rows][:, rows], dim)
        if part is None:
            part = rng.uniform(-1.0, 1.0, size=(len(rows), dim))
        out[rows] = part * (reach / max(np.abs(part).max(), 1e-12)) + meta[p]
    return out


def _pow_b(d2: np.ndarray) -> np.ndarray:
    """d2 ** B for d2 > 0 (float32, through exp and log: twice as fast as np.power)."""
    out = np.maximum(d2, np.float32(1e-30))
    np.log(out, out=out)
    out *= np.float32(B)
    return np.exp(out, out=out)


def _attract(emb: np.ndarray, h: np.ndarray, t: np.ndarray, alpha: np.float32) -> None:
    """Pull each edge's two ends together (umap-learn's attractive step, both ends move)."""
    n = emb.shape[1]
    diff = emb.take(h, axis=1)
    diff -= emb.take(t, axis=1)  # [dim, m]
    d2 = np.einsum("dm,dm->m", diff, diff)  # [m]
    d2b = _pow_b(d2)
    # -2ab d^(2(b-1)) / (1 + a d^(2b)), written with d2b = d2^b; 0 where d2 = 0
    coeff = d2b * np.float32(-2.0 * A * B)
    coeff /= np.maximum(d2, np.float32(1e-30)) * (np.float32(A) * d2b + 1)
    coeff[d2 <= 0] = 0
    diff *= coeff
    np.clip(diff, -4.0, 4.0, out=diff)
    diff *= alpha
    for axis in range(emb.shape[0]):
        emb[axis] += np.bincount(h, diff[axis], n) - np.bincount(t, diff[axis], n)


def _repel(emb: np.ndarray, h: np.ndarray, other: np.ndarray, alpha: np.float32) -> None:
    """Push each point of h away from a random point (umap-learn's negative samples)."""
    n = emb.shape[1]
    diff = emb.take(h, axis=1)
    diff -= emb.take(other, axis=1)  # [dim, s]
    d2 = np.einsum("ds,ds->s", diff, diff)  # [s]
    # 2b / ((0.001 + d2) (1 + a d2^b)); 0 where d2 = 0 (the same point)
    denom = _pow_b(d2)
    denom *= np.float32(A)
    denom += 1
    denom *= d2 + np.float32(0.001)
    coeff = np.float32(2.0 * B) / denom
    coeff[d2 <= 0] = 0
    diff *= coeff
    np.clip(diff, -4.0, 4.0, out=diff)
    diff *= alpha
    for axis in range(emb.shape[0]):
        emb[axis] += np.bincount(h, diff[axis], n)


def optimize_layout(y: np.ndarray, graph, n_epochs: int, seed: int) -> np.ndarray:
    """UMAP's SGD (umap-learn's optimize_layout_euclidean, move_other=True, gamma 1), with
    the edges due in an epoch applied together. y: [n, dim] initial layout -> [n, dim]."""
    rng = np.random.default_rng(seed)
    emb = np.ascontiguousarray(y.T, dtype=np.float32)  # [dim, n]: one row per axis
    n = emb.shape[1]
    head, tail = graph.row.astype(np.intp), graph.col.astype(np.intp)
    per_sample = graph.data.max() / graph.data.astype(np.float64)  # [edge], epochs per sample
    per_negative = per_sample / NEGATIVE_RATE
    next_sample, next_negative = per_sample.copy(), per_negative.copy()
    pool = rng.integers(0, n, size=1 << 20)  # random points for the negative samples
    for epoch in range(n_epochs):
        alpha = np.float32(1.0 - epoch / n_epochs)
        due = np.flatnonzero(next_sample <= epoch)  # [m]
        h = head[due]
        _attract(emb, h, tail[due], alpha)
        next_sample[due] += per_sample[due]
        n_neg = np.maximum((epoch - next_negative[due]) / per_negative[due], 0).astype(np.intp)
        next_negative[due] += n_neg * per_negative[due]
        hn = np.repeat(h, n_neg)  # [~5 m]
        if hn.size < pool.size:
            start = int(rng.integers(0, pool.size - hn.size))
            other = pool[start:start + hn.size]
        else:
            other = rng.integers(0, n, size=hn.size)
        _repel(emb, hn, other, alpha)
    return emb.T.astype(np.float64)


def umap(x: np.ndarray, n_components: int = 2, seed: int = 0, n_neighbors: int = N_NEIGHBORS,
         fallback_init=None) -> np.ndarray:
    """x [n, d] -> [n, n_components], UMAP with umap-learn's defaults (see the module).
    fallback_init(): the starting layout [n, n_components] when the spectral layout cannot
    be computed (its solver fails, or too few points); default: x's top principal axes."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    k = max(2, min(n_neighbors, n - 1))
    rng = np.random.default_rng(seed)
    graph = fuzzy_graph(x, k)
    n_epochs = 500 if n <= 10_000 else 200
    graph.data[graph.data < graph.data.max() / n_epochs] = 0.0
    graph.eliminate_zeros()
    init = spectral_init(graph, n_components, rng, x)
    if init is None and fallback_init is not None:
        init = fallback_init()
    if init is None:
        xc = x - x.mean(0)
        init = xc @ np.linalg.svd(xc, full_matrices=False)[2][:n_components].T  # [n, k]
    init = init * (10.0 / max(np.abs(init).max(), 1e-12))
    init = init + rng.normal(scale=1e-4, size=init.shape)
    span = np.maximum(init.max(0) - init.min(0), 1e-12)
    init = 10.0 * (init - init.min(0)) / span
    return optimize_layout(init, graph, n_epochs, seed)
