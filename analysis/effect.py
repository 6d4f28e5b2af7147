"""Attention beside its effect: six measures of how much each input token matters for one
target (analysis/effect_target.py), and how far they agree with raw attention.

1. attention: the chosen head's (or the layer's head average) attention row of the target
   position: a decoder's position, [CLS] for a [CLS]-pooled encoder, the mean of all rows for
   a mean-pooled one (all-MiniLM-L6-v2).
2. rollout: the same row(s) of attention rollout after the last layer (analysis/rollout.py).
3. attention_norm: ‖α_ij · v_j W_O‖ (Kobayashi et al., 2020), the size of what token j really
   adds to row i through the head, not only its weight: a head can attend hard to a token
   whose transformed value is tiny. For the layer, the norm of the sum over its heads.
4. gradient_x_input and 5. integrated_gradients: analysis/gradients.py.
6. occlusion: target(text) − target(text with token j removed, or replaced by [PAD] or
   [MASK]); > 0 when the token pushes the target up. Tokens after a decoder's position
   cannot change its prediction (causal attention): their effect is exactly 0, not run.

Agreement is Spearman's rank correlation over the tokens the target can see, by default of the
size of each score (|score|: a token that pushes the target down matters too).

`all_heads` computes everything that does not depend on the chosen layer and head once (the
expensive part), with every head's rows; `AllHeads.importance(layer, head)` then picks one
cheaply. `token_importance` does both in one call.

Bounds, checked before any work and never cut silently (a ValueError says the bound):
occlusion runs the model once per token, for at most MAX_OCCLUSION_TOKENS tokens; the
gradient methods' bounds are in analysis/gradients.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from analysis import cost
from analysis.ablation import Inputs
from analysis.effect_target import (
    Target, check_model, prefix, score, special_token_id, visible_length,
)
from analysis.gradients import (
    IGResult, check_gradient_bounds, default_baseline, gradient_x_input, integrated_gradients,
)
from analysis.rollout import attention_rollout
from model.hook_names import hook_names

METHODS = ("attention", "rollout", "attention_norm", "gradient_x_input", "integrated_gradients",
           "occlusion")
MAX_OCCLUSION_TOKENS = 256  # occlusion: one run of the model per token
OCCLUSION_MODES = ("remove", "pad", "mask")


# ----------------------------------------------------------------- attention-based measures
def query_weights(target: Target, n_pos: int) -> np.ndarray:
    """How the rows (queries) of an attention matrix are combined for this target: [q_pos],
    summing to 1. One-hot at a decoder's position or at [CLS]; uniform for mean pooling."""
    w = np.zeros(n_pos)
    if target.kind == "next_token":
        w[target.position] = 1.0
    elif target.pooling == "cls":
        w[0] = 1.0
    else:
        w[:] = 1.0 / n_pos
    return w


def _array(x) -> np.ndarray:
    return (x.detach().cpu().double().numpy() if isinstance(x, torch.Tensor)
            else np.asarray(x, dtype=np.float64))


def head_rows(attentions, weights: np.ndarray) -> np.ndarray:
    """Every head's target row: [n_layers, head, q, k] -> [n_layers, head, k]. One layer at a
    time in float64, so a long text's patterns are never all copied at once."""
    return np.stack([np.einsum("hqk,q->hk", _array(layer), weights) for layer in attentions])


def attention_scores(attentions, layer: int, head: int | None, weights: np.ndarray) -> np.ndarray:
    """The raw attention row of one head (or of the layer's head average, head=None): [k]."""
    a = _array(attentions[layer])  # [head, q_pos, k_pos]
    matrix = a.mean(axis=0) if head is None else a[head]  # [q_pos, k_pos]
    return weights @ matrix


def rollout_scores(attentions, weights: np.ndarray) -> np.ndarray:
    """The target row of attention rollout after the last layer: [k]. Rollout averages the
    heads first, so each layer's float64 head average goes in ([n_layers, 1, q, k]), not a
    float64 copy of every head's pattern."""
    means = np.stack([_array(layer).mean(axis=0) for layer in attentions])  # [n_layers, q, k]
    return weights @ attention_rollout(means[:, None])[-1]


def value_vectors(loaded, trace, layer: int) -> torch.Tensor:
    """f_h(x_j) = v_hj W_O[h] for every head and token: float64 [head, k_pos, d_model].
    v is the cached hook_v (bias included); W_O's bias is the same for every token and left out."""
    cfg = loaded.cfg
    v = trace.cache[hook_names(cfg).attn(layer, "v")][0].double()  # [kv_head, pos, d_head]
    v = v.repeat_interleave(cfg.n_heads // cfg.n_kv_heads, dim=0)  # [head, pos, d_head]
    w_o = loaded.model.blocks[layer].attn.W_O.detach().double().cpu()  # [head, d_head, d_model]
    return torch.bmm(v, w_o)  # [head, pos, d_model]


def attention_norms(loaded, trace, layer: int) -> np.ndarray:
    """‖α_hij · f_h(x_j)‖ = α_hij ‖f_h(x_j)‖ per head: [head, q_pos, k_pos]."""
    f_norm = value_vectors(loaded, trace, layer).norm(dim=-1)  # [head, k_pos]
    pattern = trace.cache[hook_names(loaded.cfg).attn(layer, "pattern")][0].double()  # [head, q, k]
    return (pattern * f_norm[:, None, :]).numpy()


def layer_attention_norm(loaded, trace, layer: int) -> np.ndarray:
    """‖Σ_h α_hij f_h(x_j)‖, what token j adds to row i through the whole layer: [q, k].
    Through each token's Gram matrix G_j[h, g] = f_h(x_j)·f_g(x_j), never [q, k, d_model]."""
    f = value_vectors(loaded, trace, layer)  # [head, pos, d_model]
    gram = torch.einsum("hkd,gkd->khg", f, f)  # [k_pos, head, head]
    pattern = trace.cache[hook_names(loaded.cfg).attn(layer, "pattern")][0].double()  # [head, q, k]
    mixed = torch.einsum("khg,gqk->hqk", gram, pattern)  # [head, q_pos, k_pos]
    return (pattern * mixed).sum(0).clamp_min(0).sqrt().numpy()  # [q_pos, k_pos]


def attention_norm_scores(loaded, trace, layer: int, head: int | None,
                          weights: np.ndarray) -> np.ndarray:
    """The target row of the attention norm (one head, or the layer for head=None): [k]."""
    matrix = (layer_attention_norm(loaded, trace, layer) if head is None
              else attention_norms(loaded, trace, layer)[head])  # [q_pos, k_pos]
    return weights @ matrix


# ------------------------------------------------------------------------------ occlusion
def check_occlusion_bounds(n_tokens: int) -> None:
    if n_tokens > MAX_OCCLUSION_TOKENS:
        raise ValueError(f"occlusion runs the model once per token, for at most "
                         f"{MAX_OCCLUSION_TOKENS} tokens; the target sees {n_tokens}")


def occlusion_chunk(cfg, n_pos: int, allowance: int | None = None) -> int:
    """Variants per forward pass: as many as fit `allowance` bytes (default
    cost.DEFAULT_ALLOWANCE), at least 1 and at most 64."""
    return cost.chunk("occlusion", cfg, n_pos, min(cost.OCCLUSION_MOST, n_pos), allowance)


def _variants(inputs: Inputs, js: list[int], mode: str, fill: int | None):
    """The text with token j removed (or replaced by `fill`), for each j: three [b, pos']."""
    n_pos = inputs.input_ids.shape[1]
    parts = (inputs.input_ids, inputs.attention_mask, inputs.token_type_ids)
    if mode == "remove":
        keep = torch.tensor([[i for i in range(n_pos) if i != j] for j in js])  # [b, pos-1]
        return [t[0][keep] for t in parts]
    ids = inputs.input_ids.expand(len(js), -1).clone()  # [b, pos]
    ids[torch.arange(len(js)), torch.tensor(js)] = fill
    return [ids] + [t.expand(len(js), -1) for t in parts[1:]]


def occlusion(loaded, target: Target, inputs: Inputs, mode: str = "remove",
              chunk: int | None = None, allowance: int | None = None) -> np.ndarray:
    """target(text) − target(text without token j), for each j: float64 [pos].

    mode "remove" deletes the token (later tokens move up one place; a decoder's target is
    then read one position earlier); "pad" / "mask" put [PAD] / [MASK] in its place. Removing
    the only token the target sees leaves nothing to run: that value is NaN. `chunk` variants
    run per forward pass (default: as many as fit `allowance` bytes, `occlusion_chunk`)."""
    check_model(loaded)
    if mode not in OCCLUSION_MODES:
        raise ValueError(f"occlusion mode must be one of {OCCLUSION_MODES}, got {mode!r}")
    n_pos = inputs.input_ids.shape[1]
    k = visible_length(target, n_pos)
    check_occlusion_bounds(k)
    fill = None if mode == "remove" else special_token_id(loaded, mode)
    seen = prefix(inputs, k)
    out = np.zeros(n_pos)
    if mode == "remove" and k == 1:
        out[0] = np.nan
        return out
    moved = target.at(target.position - 1) if (
        mode == "remove" and target.kind == "next_token") else target
    chunk = chunk or occlusion_chunk(loaded.cfg, k, allowance)
    with torch.no_grad():
        value = score(loaded, target, seen.input_ids, seen.attention_mask,
                      seen.token_type_ids)  # [1]
        for start in range(0, k, chunk):
            js = list(range(start, min(k, start + chunk)))
            occluded = score(loaded, moved, *_variants(seen, js, mode, fill))  # [b]
            out[start: start + len(js)] = (value - occluded).double().cpu().numpy()
    return out


# ---------------------------------------------------------------------------- agreement
def average_ranks(x) -> np.ndarray:
    """Ranks 1..n, ties sharing the mean of their ranks (as scipy.stats.rankdata does)."""
    values, inverse, counts = np.unique(np.asarray(x, dtype=np.float64), return_inverse=True,
                                        return_counts=True)
    ends = np.cumsum(counts)  # the last rank of each distinct value
    return ((ends - counts + 1 + ends) / 2.0)[inverse.reshape(-1)]


def spearman(a, b) -> float:
    """Spearman's rank correlation: the Pearson correlation of the average ranks.
    Pairs with a NaN or infinity are left out; NaN when fewer than 2 pairs remain or one side
    is constant (no ranking to compare)."""
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"both score lists need one value per token: {a.size} and {b.size}")
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2:
        return float("nan")
    ra, rb = average_ranks(a[ok]), average_ranks(b[ok])
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")


def method_correlations(scores: dict[str, np.ndarray], keep: np.ndarray,
                        absolute: bool = True) -> dict[str, float]:
    """Spearman of each method's scores with raw attention ("attention"), over the tokens
    where keep [pos] is true; absolute: rank the size of each score."""
    ref = scores["attention"][keep]
    return {name: spearman(np.abs(s[keep]) if absolute else s[keep], ref)
            for name, s in scores.items()}


def head_correlations(rows: np.ndarray, effect: np.ndarray, keep: np.ndarray,
                      absolute: bool = True) -> np.ndarray:
    """For every layer × head, Spearman of its attention row with the occlusion effect:
    rows [n_layers, head, k], effect [k], keep [k] -> [n_layers, head]."""
    e = np.abs(effect[keep]) if absolute else effect[keep]
    return np.array([[spearman(row[keep], e) for row in layer] for layer in rows])


# --------------------------------------------------------------------------- everything
@dataclass
class Importance:
    """Every method's score for every token, and their agreement with raw attention."""

    tokens: list[str]
    target: Target
    scores: dict[str, np.ndarray]  # method (METHODS order) -> float64 [pos]
    visible: np.ndarray  # bool [pos]: the tokens the target can see (all, for an encoder)
    correlations: dict[str, float]  # method -> Spearman with raw attention over visible tokens
    head_correlations: np.ndarray  # [n_layers, head]: each head's row against occlusion
    ig: IGResult  # integrated gradients' target values, steps, baseline and gap
    layer: int
    head: int | None  # None: the layer's head average
    occlusion_mode: str | None  # None: occlusion was not run (its row is NaN)


@dataclass
class AllHeads:
    """What `token_importance` needs for ANY layer and head, computed once per text, target
    and settings (the expensive part: gradients, integrated gradients, occlusion). Small:
    a few rows per layer, no [q, k] matrix is kept. `importance(layer, head)` is then cheap."""

    tokens: list[str]
    target: Target
    visible: np.ndarray  # bool [pos]
    head_rows: np.ndarray  # [n_layers, head, k]: each head's attention row of the target
    norm_rows: np.ndarray  # [n_layers, head, k]: each head's attention-norm row
    layer_norm_rows: np.ndarray  # [n_layers, k]: the whole layer's attention-norm row
    rollout: np.ndarray  # [k]
    gradient_x_input: np.ndarray  # [k]
    ig: IGResult
    occlusion: np.ndarray  # [k]; all NaN when occlusion was not run
    head_correlations: np.ndarray  # [n_layers, head]
    occlusion_mode: str | None
    absolute: bool = True

    def importance(self, layer: int, head: int | None = None) -> Importance:
        n_layers, n_heads = self.head_rows.shape[:2]
        if not 0 <= layer < n_layers or (head is not None and not 0 <= head < n_heads):
            raise ValueError(f"layer must be in [0, {n_layers}) and head in [0, {n_heads}) "
                             f"or None (the average); got layer {layer}, head {head}")
        rows = self.head_rows[layer]  # [head, k]
        scores = {
            "attention": rows.mean(0) if head is None else rows[head],
            "rollout": self.rollout,
            "attention_norm": (self.layer_norm_rows[layer] if head is None
                               else self.norm_rows[layer, head]),
            "gradient_x_input": self.gradient_x_input,
            "integrated_gradients": self.ig.attributions,
            "occlusion": self.occlusion,
        }
        return Importance(
            tokens=self.tokens, target=self.target, scores=scores, visible=self.visible,
            correlations=method_correlations(scores, self.visible, self.absolute),
            head_correlations=self.head_correlations, ig=self.ig, layer=layer, head=head,
            occlusion_mode=self.occlusion_mode)


def check_request(loaded, inputs: Inputs, target: Target, layer: int, head: int | None,
                  baseline: str, steps: int, occlusion_mode: str | None) -> None:
    """Every bound and choice of `token_importance`, before any work: ValueError if one fails.
    occlusion_mode None: occlusion is not run, so its token limit does not apply."""
    check_model(loaded)
    cfg = loaded.cfg
    if not 0 <= layer < cfg.n_layers or (head is not None and not 0 <= head < cfg.n_heads):
        raise ValueError(f"layer must be in [0, {cfg.n_layers}) and head in [0, {cfg.n_heads}) "
                         f"or None (the average); got layer {layer}, head {head}")
    k = visible_length(target, inputs.input_ids.shape[1])
    check_gradient_bounds(k, steps)
    if occlusion_mode is not None:
        check_occlusion_bounds(k)
        if occlusion_mode not in OCCLUSION_MODES:
            raise ValueError(f"occlusion mode must be one of {OCCLUSION_MODES}")
    for choice in {baseline, occlusion_mode} & {"pad", "mask"}:
        special_token_id(loaded, choice)


def _norm_rows(loaded, trace, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every head's and every layer's attention-norm row: [n_layers, head, k], [n_layers, k]."""
    heads, layers = [], []
    for layer in range(loaded.cfg.n_layers):
        heads.append(np.einsum("hqk,q->hk", attention_norms(loaded, trace, layer), weights))
        layers.append(weights @ layer_attention_norm(loaded, trace, layer))
    return np.stack(heads), np.stack(layers)


def all_heads(loaded, inputs: Inputs, target: Target, baseline: str | None = None,
              steps: int = 64, occlusion_mode: str | None = "remove", absolute: bool = True,
              allowance: int | None = None) -> AllHeads:
    """The six methods for every layer and head at once (a batch of 1). occlusion_mode None
    leaves occlusion out (its scores and the per-head correlations are NaN). Integrated
    gradients and occlusion run in chunks that fit `allowance` bytes of working memory
    (default cost.DEFAULT_ALLOWANCE; `effect_plan` says what that costs). baseline None:
    integrated gradients' default (analysis/gradients.py, `default_baseline`)."""
    baseline = baseline or default_baseline(loaded)
    check_request(loaded, inputs, target, 0, None, baseline, steps, occlusion_mode)
    names = hook_names(loaded.cfg)
    kept = {*names.every_layer("attn", "pattern"), *names.every_layer("attn", "v")}
    trace = loaded.run_ids(inputs.input_ids, inputs.attention_mask, inputs.token_type_ids,
                           keep=kept.__contains__)
    n_pos = inputs.input_ids.shape[1]
    attentions = trace.attentions[0]  # [n_layers, head, q_pos, k_pos]
    weights = query_weights(target, n_pos)  # [q_pos]
    rows = head_rows(attentions, weights)  # [n_layers, head, k]
    norm_rows, layer_norm_rows = _norm_rows(loaded, trace, weights)
    rollout = rollout_scores(attentions, weights)  # [k]
    tokens = trace.batch_tokens[0]
    del trace, attentions  # only the rows are kept
    visible = np.arange(n_pos) < visible_length(target, n_pos)  # [pos]
    effect = (np.full(n_pos, np.nan) if occlusion_mode is None
              else occlusion(loaded, target, inputs, occlusion_mode, allowance=allowance))
    return AllHeads(
        tokens=tokens, target=target, visible=visible, head_rows=rows, norm_rows=norm_rows,
        layer_norm_rows=layer_norm_rows, rollout=rollout,
        gradient_x_input=gradient_x_input(loaded, target, inputs),
        ig=integrated_gradients(loaded, target, inputs, baseline, steps, allowance),
        occlusion=effect,
        head_correlations=head_correlations(rows, effect, visible, absolute),
        occlusion_mode=occlusion_mode, absolute=absolute)


def token_importance(loaded, inputs: Inputs, target: Target, layer: int, head: int | None = None,
                     baseline: str | None = None, steps: int = 64,
                     occlusion_mode: str = "remove",
                     absolute: bool = True) -> Importance:
    """All six methods (METHODS) for one text (a batch of 1) and target, with their Spearman
    correlations with raw attention and, per head, with occlusion."""
    baseline = baseline or default_baseline(loaded)
    check_request(loaded, inputs, target, layer, head, baseline, steps, occlusion_mode)
    return all_heads(loaded, inputs, target, baseline, steps, occlusion_mode,
                     absolute).importance(layer, head)
