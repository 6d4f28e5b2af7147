"""Score parts against an independent computation: terms of the decomposition written out
by hand from the model's weights (norms with their scale taken from the run, projections,
the rotation from its formula), never through analysis/ code."""

from __future__ import annotations

import math

import pytest
import torch

from analysis.score_parts import decompose_cell
from model.hook_names import hook_names

TEXT = "The cat sat on the mat. A dog chased the ball"


def w(t: torch.Tensor) -> torch.Tensor:
    return t.detach().double()


def layer_norm_part(part, x_run, ln):
    """One part through LayerNorm with its scale frozen at x_run (both [d])."""
    sigma = torch.sqrt(x_run.var(unbiased=False) + ln.eps)
    return (part - part.mean()) / sigma * w(ln.weight)


def entry(cell, q_key: tuple, k_key: tuple) -> float:
    return float(cell.grid[cell.q_keys.index(q_key), cell.k_keys.index(k_key)])


def test_gpt2_by_hand(tiny_models_loaded):
    lm = tiny_models_loaded["gpt2"]
    model, names = lm.model, hook_names(lm.cfg)
    trace = lm.run(TEXT)
    ids = trace.input_ids[0]
    tok, pos = w(model.embed.W_E.weight)[ids], w(model.embed.W_pos.weight)[:len(ids)]
    x = tok + pos  # [pos, d]
    block, head, i, j = model.blocks[0], 2, 7, 3
    a = block.attn
    scale = 1 / math.sqrt(lm.cfg.d_head)
    q = {n: layer_norm_part(p[i], x[i], block.ln1) @ w(a.W_Q[head])
         for n, p in (("token", tok), ("position", pos))}
    k = {n: layer_norm_part(p[j], x[j], block.ln1) @ w(a.W_K[head])
         for n, p in (("token", tok), ("position", pos))}
    cell = decompose_cell(lm, trace, 0, head, i, j)
    for qn in q:
        for kn in k:
            assert entry(cell, (qn,), (kn,)) == pytest.approx(
                scale * float(q[qn] @ k[kn]), rel=1e-9, abs=1e-12)
    # the query's bias against the key's position part
    assert entry(cell, ("query bias",), ("position",)) == pytest.approx(
        scale * float(w(a.b_Q[head]) @ k["position"]), rel=1e-9, abs=1e-12)
    # layer 1: layer 0's head 1 at the query against the key's token embedding, by hand
    z = trace.cache[names.attn(0, "z")][0].double()  # [head, pos, d_head]
    out = z[1, i] @ w(a.W_O[1])  # [d]
    resid = trace.cache[names.resid(1, "pre")][0].double()  # [pos, d]
    b1, a1 = model.blocks[1], model.blocks[1].attn
    q1 = layer_norm_part(out, resid[i], b1.ln1) @ w(a1.W_Q[0])
    k1 = layer_norm_part(tok[j], resid[j], b1.ln1) @ w(a1.W_K[0])
    cell1 = decompose_cell(lm, trace, 1, 0, i, j)
    assert entry(cell1, ("head", 0, 1), ("token",)) == pytest.approx(
        scale * float(q1 @ k1), rel=1e-6, abs=1e-9)


def rotate(v: torch.Tensor, position: int, theta: float) -> torch.Tensor:
    """Llama's rotation of one vector [d_head], from its formula."""
    half = v.shape[0] // 2
    out = v.clone()
    for m in range(half):
        angle = position * theta ** (-2 * m / v.shape[0])
        c, s = math.cos(angle), math.sin(angle)
        out[m] = v[m] * c - v[m + half] * s
        out[m + half] = v[m + half] * c + v[m] * s
    return out


def test_llama_by_hand(tiny_models_loaded):
    lm = tiny_models_loaded["llama"]
    assert lm.cfg.rope_scaling == "none"
    model = lm.model
    trace = lm.run(TEXT)
    ids = trace.input_ids[0]
    x = w(model.embed.W_E.weight)[ids]  # [pos, d]
    block, head, i, j = model.blocks[0], 3, 8, 2
    a, theta = block.attn, lm.cfg.rope_theta
    kv = head // (lm.cfg.n_heads // lm.cfg.n_kv_heads)

    def normed(v):
        return v * torch.rsqrt(v.pow(2).mean() + block.ln1.eps) * w(block.ln1.weight)

    q = normed(x[i]) @ w(a.W_Q[head])
    k = normed(x[j]) @ w(a.W_K[kv])
    qr, kr = rotate(q, i, theta), rotate(k, j, theta)
    scale = 1 / math.sqrt(lm.cfg.d_head)
    cell = decompose_cell(lm, trace, 0, head, i, j)
    assert cell.q_keys == [("token",)] and cell.k_keys == [("token",)]
    assert float(cell.grid[0, 0]) == pytest.approx(scale * float(qr @ kr), rel=1e-6)
    half = lm.cfg.d_head // 2
    bands = [scale * float(qr[m] * kr[m] + qr[m + half] * kr[m + half]) for m in range(half)]
    assert cell.bands.tolist() == pytest.approx(bands, rel=1e-5, abs=1e-9)
    for d, value in zip(cell.distances, cell.curve):
        by_hand = scale * float(rotate(q, int(d) + 5, theta) @ rotate(k, 5, theta))
        assert float(value) == pytest.approx(by_hand, rel=1e-5, abs=1e-8)


def test_bert_by_hand(tiny_models_loaded):
    lm = tiny_models_loaded["bert"]
    model, names = lm.model, hook_names(lm.cfg)
    trace = lm.run(TEXT)
    ids, types = trace.input_ids[0], trace.token_type_ids[0]
    emb = model.embed
    tok, pos = w(emb.W_E.weight)[ids], w(emb.W_pos.weight)[:len(ids)]
    x = tok + w(emb.W_type.weight)[types] + pos  # [pos, d]
    head, i, j = 1, 5, 9
    scale = 1 / math.sqrt(lm.cfg.d_head)
    # layer 0 reads the embeddings' LayerNorm output (post-LN): position × position
    pe = torch.stack([layer_norm_part(pos[p], x[p], emb.ln) for p in range(len(ids))])
    a0 = model.blocks[0].attn
    cell0 = decompose_cell(lm, trace, 0, head, i, j)
    assert entry(cell0, ("position",), ("position",)) == pytest.approx(
        scale * float((pe[i] @ w(a0.W_Q[head])) @ (pe[j] @ w(a0.W_K[head]))), rel=1e-9)
    # layer 1: the same part after layer 0's two norms, each frozen at its input in the run
    b0 = model.blocks[0]
    pre = trace.cache[names.resid(0, "pre")][0].double()
    ln1_in = pre + trace.cache[names.out(0, "attn")][0].double()
    ln2_in = trace.cache[names.resid(0, "mid")][0].double() + \
        trace.cache[names.out(0, "mlp")][0].double()

    def through(p):
        return layer_norm_part(layer_norm_part(pe[p], ln1_in[p], b0.ln1), ln2_in[p], b0.ln2)

    a1 = model.blocks[1].attn
    cell1 = decompose_cell(lm, trace, 1, head, i, j)
    assert entry(cell1, ("position",), ("position",)) == pytest.approx(
        scale * float((through(i) @ w(a1.W_Q[head])) @ (through(j) @ w(a1.W_K[head]))),
        rel=1e-5)
