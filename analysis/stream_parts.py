"""The residual stream taken apart: what each attention layer reads, as a sum of the parts
that wrote it.

The stream entering a model's first block is the embeddings' sum (token, token type,
position; BERT normalises it, ELECTRA widens it). Each block then adds what its attention
heads and its MLP wrote. A norm is not linear, but with its scale held at the value it had
in this run (1/σ for LayerNorm, 1/rms for RMSNorm, one number per position: the *frozen-norm*
convention, as in analysis/attribution.py) it is: LayerNorm(x) = (x − mean x) · w / σ + b,
and the mean subtraction is linear too. So a post-LN stream (BERT), normalised after every
part, is still a sum of the same parts, each passed through every frozen norm since it was
written, plus one part per norm bias. What each layer's attention reads (after its own norm)
splits the same way, exactly.

Each part is the *direct* path: an earlier head's output is one part, whatever it read
itself. Parts are keyed by plain tuples:

    ("token",), ("type",), ("position",)          the embeddings
    ("head", layer, head)                          one head's z · W_O
    ("attn bias", layer), ("mlp", layer), ("mlp bias", layer)
    ("norm bias", where)                           a frozen norm's bias (where: a plain name)
    ("project bias",)                              ELECTRA's widening layer's bias

`group_of(key)` names the group a part belongs to; `stream_parts` can add parts of one group
into one on the way (the all-heads measure only needs a few groups at every position).
Everything is float64, read from one run's hook points; the model is never changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch

from model.hook_names import hook_names

Key = tuple
Parts = dict  # key -> [pos, d_model] float64

GROUPS = ("token", "position", "type", "attention", "mlp", "bias")


def group_of(key: Key) -> str:
    """The group of a part: token, position, type (the embeddings), attention (earlier
    heads), mlp (earlier MLPs), bias (every fixed bias, norms' included)."""
    kind = key[0]
    if kind in ("token", "position", "type"):
        return kind
    return {"head": "attention", "mlp": "mlp"}.get(kind, "bias")


def _add(parts: Parts, key: Key, value: torch.Tensor, merge: Callable | None) -> None:
    key = merge(key) if merge is not None else key
    parts[key] = parts[key] + value if key in parts else value


def total(parts: Parts) -> torch.Tensor:
    """[pos, d_model]: the sum of every part."""
    return torch.stack(list(parts.values())).sum(0)


def freeze(norm, parts: Parts, where: str, merge: Callable | None = None,
           x: torch.Tensor | None = None) -> Parts:
    """The parts after `norm` with its scale frozen at its value on their sum (or on `x`,
    [pos, d]): each part centred (LayerNorm), times the gain over σ (or rms); the norm's bias
    one more part, keyed ("norm bias", where)."""
    x = total(parts) if x is None else x  # [pos, d]
    gain = norm.gain().detach().double().cpu()  # [d]
    if norm.centred:
        inv = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + norm.eps)  # [pos, 1]
        out = {k: (p - p.mean(-1, keepdim=True)) * gain * inv for k, p in parts.items()}
        _add(out, ("norm bias", where), norm.bias.detach().double().cpu().expand_as(x), merge)
        return out
    inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps)  # [pos, 1]
    return {k: p * gain * inv for k, p in parts.items()}


def embedding_parts(model, cache, positions: torch.Tensor,
                    merge: Callable | None = None) -> Parts:
    """The first block's input at `positions` as parts: token, type, position (each as the
    model adds it), through the embedding norm and widening where the model has them."""
    names = hook_names(model.cfg)
    parts: Parts = {}
    for key, part in (("token", "tok"), ("type", "type"), ("position", "pos")):
        name = names.embed(part, required=False)
        if name is not None and name in cache:
            _add(parts, (key,), cache[name][0, positions].double(), merge)
    ln = getattr(model.embed, "ln", None)
    if ln is not None:
        parts = freeze(ln, parts, "after the embeddings", merge)
    project = getattr(model.embed, "project", None)
    if project is not None:  # ELECTRA: a linear layer widens the embeddings
        w = project.weight.detach().double().cpu()  # [d_model, d_embed]
        parts = {k: p @ w.T for k, p in parts.items()}
        _add(parts, ("project bias",), project.bias.detach().double().cpu().expand(
            len(positions), -1), merge)
    return parts


def _head_parts(block, cache, layer: int, positions, merge) -> Parts:
    """What block `layer`'s attention added at `positions`: one part per head (z · W_O[h])
    and its bias b_O; through Gemma's norm after attention (frozen) where it has one."""
    names = hook_names(block.attn.cfg)
    attn = block.attn
    z = cache[names.attn(layer, "z")][0][:, positions].double()  # [head, pos, d_head]
    w_o = attn.W_O.detach().double().cpu()  # [head, d_head, d_model]
    per_head = torch.einsum("hpd,hdm->hpm", z, w_o)  # [head, pos, d_model]
    parts: Parts = {}
    for h in range(per_head.shape[0]):
        _add(parts, ("head", layer, h), per_head[h], merge)
    if attn.b_O is not None:
        _add(parts, ("attn bias", layer), attn.b_O.detach().double().cpu().expand(
            len(positions), -1), merge)
    post = getattr(block, "ln1_post", None)
    return parts if post is None else freeze(post, parts, f"after attention {layer}", merge)


def _mlp_parts(block, cache, layer: int, positions, merge) -> Parts:
    """What block `layer`'s MLP added at `positions`: its output without its bias, and the
    bias; through Gemma's norm after the MLP (frozen) where it has one."""
    names = hook_names(block.attn.cfg)
    out = cache[names.out(layer, "mlp")][0, positions].double()  # [pos, d_model]
    bias = getattr(block.mlp.W_out, "bias", None)
    parts: Parts = {}
    if bias is None:
        _add(parts, ("mlp", layer), out, merge)
    else:
        b = bias.detach().double().cpu()  # [d_model]
        _add(parts, ("mlp", layer), out - b, merge)
        _add(parts, ("mlp bias", layer), b.expand_as(out), merge)
    post = getattr(block, "ln2_post", None)
    return parts if post is None else freeze(post, parts, f"after MLP {layer}", merge)


def _join(parts: Parts, more: Parts) -> Parts:
    out = dict(parts)
    for k, p in more.items():
        out[k] = out[k] + p if k in out else p
    return out


def attention_inputs(model, cache, positions, stop: int | None = None,
                     merge: Callable | None = None) -> Iterator[tuple[int, Parts]]:
    """(layer, parts) for layers 0 .. stop − 1: what each layer's attention reads at
    `positions` ([n] token positions), split into parts that add up to it exactly, with every
    norm's scale frozen at this run's value. `merge(key)` maps a part's key to the key it is
    added into (None: every part kept on its own)."""
    positions = torch.as_tensor(positions, dtype=torch.long)
    parts = embedding_parts(model, cache, positions, merge)
    kind = model.cfg.block
    for layer, block in enumerate(model.blocks[:stop]):
        if kind == "post_ln":
            yield layer, parts  # BERT: attention reads the stream itself
        else:
            yield layer, freeze(block.ln1, parts, f"before attention {layer}", merge)
        if stop is not None and layer == stop - 1:
            return
        parts = _next_stream(model, block, cache, layer, positions, parts, merge)


def _next_stream(model, block, cache, layer: int, positions, parts: Parts, merge) -> Parts:
    """The stream after block `layer`, as parts."""
    heads = _head_parts(block, cache, layer, positions, merge)
    mlp = None if block.mlp is None else (lambda: _mlp_parts(block, cache, layer, positions,
                                                             merge))
    if model.cfg.block == "post_ln":
        parts = freeze(block.ln1, _join(parts, heads), f"after attention {layer}", merge)
        if mlp is None:
            return parts
        return freeze(block.ln2, _join(parts, mlp()), f"after MLP {layer}", merge)
    parts = _join(parts, heads)
    return parts if mlp is None else _join(parts, mlp())
