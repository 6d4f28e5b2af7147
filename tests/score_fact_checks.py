"""The independent check of the "why" fact (teaching/facts_scores.py): the head that looks back
from the attention weights, its score from the run's own scores, the score's word and place
shares written out by hand from the weights of a BERT-style model's first layer (its
embedding LayerNorm's scale taken from the run), and the head on the words reversed, run
again. Nothing here goes through analysis/score_parts.py or analysis/positional_heads.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch


def _back(model, trace) -> tuple[np.ndarray, list[int]]:
    """([layer, head] mean weight on the token just before, the rows it is taken over)."""
    special = set(model.tokenizer.special_ids)
    ids = [int(i) for i in trace.input_ids[0]]
    rows = [i for i in range(1, len(ids)) if ids[i] not in special and ids[i - 1] not in special]
    a = trace.attentions.double().numpy()
    return np.mean([a[:, :, i, i - 1] for i in rows], axis=0), rows


def _kinds_by_hand(model, trace, head: int, i: int, j: int) -> dict[str, float]:
    """Layer 0 of a BERT-style encoder: q and k of the embedding LayerNorm's output, split
    into word (token + token type), place (position) and fixed (LayerNorm's shift, the
    projections' biases) parts; each product of a query part and a key part summed by kind."""
    m = model.model
    emb, attn = m.embed, m.blocks[0].attn
    w = lambda t: t.detach().double()  # noqa: E731
    ids, types = trace.input_ids[0], trace.token_type_ids[0]
    word = w(emb.W_E.weight)[ids] + w(emb.W_type.weight)[types]  # [pos, d]
    place = w(emb.W_pos.weight)[:len(ids)]  # [pos, d]
    x = word + place

    def normed(part, p):  # LayerNorm with its scale frozen at the whole input's
        sigma = torch.sqrt(x[p].var(unbiased=False) + emb.ln.eps)
        return (part - part.mean()) / sigma * w(emb.ln.weight)

    def sides(p, weight, bias):
        return {"word": normed(word[p], p) @ weight, "place": normed(place[p], p) @ weight,
                "fixed": w(emb.ln.bias) @ weight + bias}

    q = sides(i, w(attn.W_Q[head]), w(attn.b_Q[head]))
    k = sides(j, w(attn.W_K[head]), w(attn.b_K[head]))
    scale = 1 / math.sqrt(model.cfg.d_head)
    out = {"place": 0.0, "words": 0.0, "word and place": 0.0, "fixed": 0.0}
    for a, qa in q.items():
        for b, kb in k.items():
            kind = "fixed" if "fixed" in (a, b) else "place" if a == b == "place" else \
                "words" if a == b == "word" else "word and place"
            out[kind] += scale * float(qa @ kb)
    return out


def _place_share_by_hand(model, trace, head: int) -> float:
    """Layer 0 of a BERT-style encoder: the share of the head's score spread (each row centred)
    that the place-only score (position and fixed parts on both sides) explains."""
    m = model.model
    emb, attn = m.embed, m.blocks[0].attn
    w = lambda t: t.detach().double()  # noqa: E731
    ids, types = trace.input_ids[0], trace.token_type_ids[0]
    place = w(emb.W_pos.weight)[:len(ids)]  # [pos, d]
    x = w(emb.W_E.weight)[ids] + w(emb.W_type.weight)[types] + place
    sigma = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + emb.ln.eps)  # [pos, 1]
    fixed = (place - place.mean(-1, keepdim=True)) / sigma * w(emb.ln.weight) + w(emb.ln.bias)
    q = fixed @ w(attn.W_Q[head]) + w(attn.b_Q[head])  # [pos, d_head]
    k = fixed @ w(attn.W_K[head]) + w(attn.b_K[head])
    p = (q @ k.T) / math.sqrt(model.cfg.d_head)  # [q_pos, k_pos]
    s = trace.cache["blocks.0.attn.hook_scores"][0, head].double()  # no padding: all seen
    s, p = s - s.mean(-1, keepdim=True), p - p.mean(-1, keepdim=True)
    return max(0.0, 1 - float((s - p).pow(2).sum() / s.pow(2).sum()))


def verify_why(fact: dict, trace, model) -> None:
    back, rows = _back(model, trace)
    layer, head = np.unravel_index(back.argmax(), back.shape)
    assert (fact["layer"], fact["head"]) == (layer, head)
    assert fact["back"] == pytest.approx(back[layer, head], abs=1e-6)
    a = trace.attentions[layer, head].double().numpy()
    query = max(rows, key=lambda r: a[r, r - 1])
    assert (fact["query_pos"], fact["key_pos"]) == (query, query - 1)
    assert fact["weight"] == pytest.approx(a[query, query - 1], abs=1e-6)
    score = float(trace.cache[f"blocks.{layer}.attn.hook_scores"][0, head, query, query - 1])
    assert fact["score"] == pytest.approx(score, rel=1e-6)
    if layer != 0 or model.cfg.family not in ("bert", "roberta"):
        raise AssertionError("the by-hand check of the why fact covers a BERT-style layer 0")
    kinds = _kinds_by_hand(model, trace, head, query, query - 1)
    assert sum(kinds.values()) == pytest.approx(score, rel=1e-4)
    size = sum(abs(v) for v in kinds.values())
    assert fact["place"] == pytest.approx(abs(kinds["place"]) / size, abs=1e-4)
    assert fact["words"] == pytest.approx(abs(kinds["words"]) / size, abs=1e-4)
    assert fact["mixed"] == pytest.approx(abs(kinds["word and place"]) / size, abs=1e-4)
    assert fact["answer"].startswith("where") == (fact["place"] >= fact["words"])
    words = trace.texts[0].rstrip(".!?").split()
    assert fact["reversed"] == " ".join(words[::-1]) + trace.texts[0][len(trace.texts[0].rstrip(
        ".!?")):]
    again, _ = _back(model, model.run(fact["reversed"]))
    assert fact["back_again"] == pytest.approx(again[layer, head], abs=1e-6)
    assert fact["again"].startswith("yes") == (again[layer, head] >= 0.5)
    assert fact["positional"] == pytest.approx(_place_share_by_hand(model, trace, head),
                                               abs=1e-4)
    assert 1 <= fact["rank"] <= back.size
