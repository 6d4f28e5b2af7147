"""Where tokens live: the embedding sum taken apart, and token vectors projected to 2D / 3D.

Pure numpy / torch (scikit-learn for t-SNE; UMAP is our own, `umap_layout.py`, because
umap-learn compiles for a minute on a fresh server): a trace in, arrays out. Nothing here
plots, and nothing changes a model or a trace.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch

from model.hook_names import hook_names
from model.trace import Trace

METHODS = ("PCA", "t-SNE", "UMAP")
# t-SNE and UMAP cost seconds per thousand points on a small CPU; above these the app refuses.
# UMAP: 512 tokens x 7 layers (3,584 points) in ~3-5 s on 2 cores; scikit-learn's t-SNE needs
# 46 CPU-s for as many points and 29 for 1,500 (BENCHMARKS.md, issue 15), so it stays at 1,500
# and a larger view is pointed to UMAP, whose layouts keep neighbours as well.
MAX_POINTS = {"t-SNE": 1500, "UMAP": 4000}
MIN_POINTS = 5  # t-SNE's perplexity and UMAP's neighbour graph need a few points


class ProjectionRefused(ValueError):
    """A projection was asked for more (or fewer) points than it is allowed; the message says
    what the bound is and what to do instead."""


# ---------------------------------------------------------------------------- projections
@dataclass(frozen=True)
class PCAResult:
    coords: np.ndarray  # [point, component]
    components: np.ndarray  # [component, d], unit rows
    mean: np.ndarray  # [d]
    explained: np.ndarray  # [component], share of the total variance (0..1)


def _as_points(x, name: str = "x") -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be [point, d] with at least one point, got {arr.shape}")
    return arr


def _one_blas_thread():
    """One BLAS thread for the small dense algebra of PCA: ~50 ms at 3,584 x 384 either way,
    and no stalls of several seconds when a shared machine has more jobs than cores."""
    try:
        from threadpoolctl import threadpool_limits  # comes with scikit-learn
    except ImportError:  # pragma: no cover - scikit-learn is a requirement
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def pca(x, n_components: int = 2) -> PCAResult:
    """Principal components, exact and deterministic: x [point, d] -> coords [point, k].

    Each component's sign is fixed so that its largest loading is positive. With fewer
    points or dimensions than components, the missing components are zero.
    """
    with _one_blas_thread():
        return _pca(_as_points(x), n_components)


def _pca(x: np.ndarray, n_components: int) -> PCAResult:
    n, d = x.shape
    mean = x.mean(axis=0)  # [d]
    xc = x - mean  # [point, d]
    k = min(n_components, d)
    if n >= d:  # d x d eigenproblem: ~30 ms at d = 384, whatever the number of points
        values, vectors = np.linalg.eigh(xc.T @ xc)  # [d], [d, d], ascending
        order = np.argsort(values)[::-1][:k]
        comps, var = vectors[:, order].T, np.clip(values[order], 0, None)  # [k, d], [k]
    else:  # fewer points than dimensions: the thin SVD is the small problem
        _, s, vt = np.linalg.svd(xc, full_matrices=False)  # vt: [min(n, d), d]
        comps, var = vt[:k], s[:k] ** 2  # [<=k, d], [<=k]
    if comps.shape[0] < n_components:  # pad: no variance left to explain
        pad = n_components - comps.shape[0]
        comps = np.vstack([comps, np.zeros((pad, d))])  # [k, d]
        var = np.concatenate([var, np.zeros(pad)])
    rows = np.arange(comps.shape[0])
    signs = np.sign(comps[rows, np.abs(comps).argmax(axis=1)])  # [k]
    comps = comps * np.where(signs == 0, 1.0, signs)[:, None]  # [k, d]
    total = float((xc**2).sum())
    explained = var / total if total > 0 else np.zeros_like(var)
    return PCAResult(xc @ comps.T, comps, mean, explained)  # coords: [point, k]


def check_size(method: str, n_points: int) -> None:
    """Raise ProjectionRefused if `method` may not run on n_points."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "PCA":
        return
    if n_points > MAX_POINTS[method]:
        raise ProjectionRefused(
            f"{method} is limited to {MAX_POINTS[method]:,} points here and this view has "
            f"{n_points:,}. "
            + ("UMAP takes up to {:,} points and keeps neighbours as well; or use ".format(
                MAX_POINTS["UMAP"]) if method == "t-SNE" and n_points <= MAX_POINTS["UMAP"]
               else "Use ")
            + "PCA, a shorter text, fewer sentences, or one layer at a time.")
    if n_points < MIN_POINTS:
        raise ProjectionRefused(f"{method} needs at least {MIN_POINTS} points; this view has "
                                f"{n_points}. Use PCA or a longer text.")


def tsne(x, n_components: int = 2, seed: int = 0) -> np.ndarray:
    from sklearn.manifold import TSNE

    x = _as_points(x)
    check_size("t-SNE", len(x))
    perplexity = float(min(30.0, (len(x) - 1) / 3))  # must stay below the number of points
    return TSNE(n_components=n_components, perplexity=perplexity, init="pca",
                learning_rate="auto", random_state=seed).fit_transform(x)  # [point, k]


def umap(x, n_components: int = 2, seed: int = 0) -> np.ndarray:
    """UMAP with umap-learn's defaults (15 neighbours, min_dist 0.1), our implementation:
    [point, d] -> [point, k]. A neighbour graph in pieces starts from the PCA layout."""
    from analysis.umap_layout import umap as umap_layout

    x = _as_points(x)
    check_size("UMAP", len(x))
    with _one_blas_thread():
        return umap_layout(x, n_components, seed,
                           fallback_init=lambda: pca(x, n_components).coords)  # [point, k]


def project(x, method: str = "PCA", n_components: int = 2, seed: int = 0) -> np.ndarray:
    """[point, d] -> [point, n_components] with PCA, t-SNE or UMAP."""
    if n_components not in (2, 3):
        raise ValueError(f"n_components must be 2 or 3, got {n_components}")
    check_size(method, len(_as_points(x)))
    if method == "PCA":
        return pca(x, n_components).coords
    return tsne(x, n_components, seed) if method == "t-SNE" else umap(x, n_components, seed)


def project_layers(states, method: str = "PCA", n_components: int = 2,
                   layer: int | None = None, seed: int = 0
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    """Token vectors of every layer [layer, point, d] projected; returns (coords, explained).

    layer=None fits one projection on all layers together (so a token can be followed from
    layer to layer): coords [layer, point, k]. An int fits that layer alone: coords [point, k].
    explained: PCA's share of variance per component [k]; None for t-SNE and UMAP.
    """
    s = np.asarray(states, dtype=np.float64)  # [layer, point, d]
    if s.ndim != 3:
        raise ValueError(f"states must be [layer, point, d], got shape {s.shape}")
    x = s[layer] if layer is not None else s.reshape(-1, s.shape[-1])  # [(layer *) point, d]
    check_size(method, len(x))
    if method == "PCA":
        fit = pca(x, n_components)
        coords, explained = fit.coords, fit.explained  # [n, k], [k]
    else:
        coords, explained = project(x, method, n_components, seed), None  # [n, k]
    if layer is None:
        coords = coords.reshape(s.shape[0], s.shape[1], n_components)  # [layer, point, k]
    return coords, explained


# ------------------------------------------------------------------- the embedding sum
@dataclass(frozen=True)
class EmbeddingParts:
    """What the embedding layer added, for one text of a trace. Every array is [pos, d_model]."""

    parts: dict[str, np.ndarray]  # "token", "token type", "position", in the order added
    hooks: dict[str, str]  # part (and "sum", "after LayerNorm") -> the hook it was read from
    total: np.ndarray  # the model's own sum (hook_sum), what the parts add up to
    normed: np.ndarray | None  # after BERT's embedding LayerNorm, else None
    shapes: dict[str, tuple[int, ...]]  # hook -> the tensor's shape in the trace (with batch)

    def norms(self) -> dict[str, np.ndarray]:
        """Name -> [pos] L2 norm of each token's vector, parts first, then "sum" (and LN)."""
        rows = dict(self.parts, sum=self.total)
        if self.normed is not None:
            rows["after LayerNorm"] = self.normed
        return {name: np.linalg.norm(v, axis=-1) for name, v in rows.items()}


PARTS = (("token", "tok"), ("token type", "type"), ("position", "pos"))  # label, embed part


def embedding_parts(trace: Trace, item: int = 0) -> EmbeddingParts:
    """The embedding sum of text `item`, read from the trace's own hooks (nothing recomputed).

    Rotary models add no position vector: their "sum" is the token embedding alone.
    """
    cache, names = trace.cache, hook_names(trace.cfg)
    n = int(trace.attention_mask[item].sum())  # real tokens (a batch may pad)
    tok = names.embed("tok")
    if tok not in cache:
        raise ValueError(f"this trace did not keep {tok}; run it with the embedding hooks")
    parts, hooks, shapes = {}, {}, {}
    for name, part in PARTS:
        hook = names.embed(part, required=False)
        if hook in cache:
            parts[name] = cache[hook][item, :n].numpy()  # [pos, d_model]
            hooks[name], shapes[hook] = hook, tuple(cache[hook].shape)
    sum_hook = names.embed("sum", required=False)
    sum_hook = sum_hook if sum_hook in cache else tok
    hooks["sum"], shapes[sum_hook] = sum_hook, tuple(cache[sum_hook].shape)
    total = cache[sum_hook][item, :n].numpy()  # [pos, d_model]
    normed, ln = None, names.embed("ln", required=False)
    if ln in cache:
        normed = cache[ln][item, :n].numpy()  # [pos, d_model]
        hooks["after LayerNorm"] = ln
        shapes[ln] = tuple(cache[ln].shape)
    return EmbeddingParts(parts, hooks, total, normed, shapes)


# ----------------------------------------------------------------- token points of a trace
@dataclass(frozen=True)
class TokenPoints:
    """Every real token of every text in a trace, at every layer."""

    states: np.ndarray  # [layer, point, d_model]: embeddings (layer 0), then each block's output
    tokens: list[str]  # [point]
    positions: np.ndarray  # [point], position within its text
    sentence: np.ndarray  # [point], which text of the batch


def token_points(trace: Trace) -> TokenPoints:
    """Hidden states of all real (non-padding) tokens, texts one after another."""
    hs = trace.hidden_states if trace.batched else trace.hidden_states[None]
    hs = hs.numpy()  # [batch, layer, pos, d_model]
    keep = trace.attention_mask.bool().numpy()  # [batch, pos]
    batch_idx, pos_idx = np.nonzero(keep)  # [point] each, text by text
    states = hs[batch_idx, :, pos_idx].transpose(1, 0, 2)  # [layer, point, d_model]
    tokens = [trace.batch_tokens[b][p] for b, p in zip(batch_idx, pos_idx)]
    return TokenPoints(states, tokens, pos_idx, batch_idx)


# ------------------------------------------------------------ queries and keys in one space
@dataclass(frozen=True)
class JointQK:
    q: np.ndarray  # [pos, 2]: each query, projected
    k: np.ndarray  # [pos, 2]: each key, in the same space
    top_key: np.ndarray  # [pos]: the key each query attends to most (from the real pattern)
    explained: np.ndarray  # [2]: share of the joint variance the two axes show


def query_key_vectors(trace: Trace, layer: int, head: int, item: int = 0):
    """(q [pos, d_head], k [pos, d_head], pattern [q_pos, k_pos]) of one head, as the model
    dotted them: rotary models' q and k after rotation; grouped-query heads share a k head."""
    cfg = trace.cfg
    if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ValueError(f"layer must be in [0, {cfg.n_layers}) and head in [0, {cfg.n_heads})")
    rot, names = "rot_" if cfg.positions == "rotary" else "", hook_names(cfg)
    n = int(trace.attention_mask[item].sum())
    kv_head = head // (cfg.n_heads // cfg.n_kv_heads)
    q = trace.cache[names.attn(layer, rot + "q")][item, head, :n]  # [pos, d_head]
    k = trace.cache[names.attn(layer, rot + "k")][item, kv_head, :n]  # [pos, d_head]
    pattern = trace.cache[names.attn(layer, "pattern")][item, head, :n, :n]  # [q, k]
    return q.numpy(), k.numpy(), pattern.numpy()


def balance_queries_keys(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttentionViz's normalisation, which leaves every softmax row unchanged: move the keys
    so their mean is the queries' mean (adds q·c to a whole row of scores), then scale q by a
    and k by 1/a so both have the same mean norm (q·k unchanged)."""
    k = k - k.mean(axis=0) + q.mean(axis=0)  # [pos, d_head]
    qn, kn = np.linalg.norm(q, axis=1).mean(), np.linalg.norm(k, axis=1).mean()
    a = np.sqrt(kn / qn) if qn > 0 and kn > 0 else 1.0
    return q * a, k / a


def joint_qk(q, k, pattern, balance: bool = False) -> JointQK:
    """Queries and keys of one head projected together by one PCA, plus each query's top key."""
    q, k = _as_points(q, "q"), _as_points(k, "k")
    p = np.asarray(pattern)
    if q.shape != k.shape or p.shape != (len(q), len(k)):
        raise ValueError(f"q, k must be [pos, d_head] and pattern [pos, pos]; got {q.shape}, "
                         f"{k.shape}, {p.shape}")
    if balance:
        q, k = balance_queries_keys(q, k)
    fit = pca(np.vstack([q, k]), 2)  # coords: [2 * pos, 2]
    return JointQK(fit.coords[: len(q)], fit.coords[len(q):], p.argmax(axis=1), fit.explained)
