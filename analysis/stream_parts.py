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
    ("cross head", layer, head), ("cross bias", layer)   an encoder–decoder's decoder:
                                                   one cross-attention head, its bias
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

GROUPS = ("token", "position", "type", "attention", "cross", "mlp", "bias")


def group_of(key: Key) -> str:
    """The group of a part: token, position, type (the embeddings), attention (earlier
    heads), cross (a decoder's earlier cross-attention heads), mlp (earlier MLPs), bias
    (every fixed bias, norms' included)."""
    kind = key[0]
    if kind in ("token", "position", "type"):
        return kind
    return {"head": "attention", "cross head": "cross", "mlp": "mlp"}.get(kind, "bias")


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
                    merge: Callable | None = None, names=None) -> Parts:
    """The first block's input at `positions` as parts: token, type, position (each as the
    model adds it), through the embedding norm and widening where the model has them.
    `model` is any stack with `cfg` and `embed` (an encoder–decoder's decoder too, with its
    own `names`)."""
    names = hook_names(model.cfg) if names is None else names
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


def block_outputs(block, kind: str, cache, layer: int, positions) -> tuple:
    """(z [head, pos, d_head], attention output [pos, d_model] (the heads joined, b_O
    added), MLP output [pos, d_model] or None) of block `layer` at `positions` only, by the
    engine's own modules from what the run kept (the block's input and its attention
    pattern): a cell needs two positions, not the whole text recomputed."""
    names = hook_names(block.attn.cfg)
    attn = block.attn
    device = attn.W_Q.device
    x = cache[names.resid(layer, "pre")][0, positions].to(device)  # [pos, d_model]
    pattern = cache[names.attn(layer, "pattern")][0][:, positions].to(device)  # [head, pos, k]
    v = attn.kv_per_head(cache[names.attn(layer, "v")].to(device))  # [1, head, k_pos, d_head]
    with torch.no_grad():
        z = attn.z_from(pattern[None], v)  # [1, head, pos, d_head]
        out = attn.out_from(z)[0]  # [pos, d_model]
        if block.mlp is None:
            return z[0].cpu(), out.cpu(), None
        mlp_in = {"pre_ln": lambda: block.ln2(x + out), "post_ln": lambda: block.ln1(x + out),
                  "parallel": lambda: block.ln2(x),
                  "sandwich": lambda: block.ln2(x + block.ln1_post(out))}[kind]()
        return z[0].cpu(), out.cpu(), block.mlp(mlp_in[None])[0].cpu()


def _head_parts(block, z: torch.Tensor, out: torch.Tensor, layer: int, merge) -> Parts:
    """What block `layer`'s attention added, from its z [head, pos, d_head]: one part per
    head (z · W_O[h]) and its bias b_O; through Gemma's norm after attention (frozen) where it
    has one. With a `merge` that puts a layer's heads together, they are added as one: the
    engine's own output `out` [pos, d_model] less its bias (float32 arithmetic, as the run's)."""
    attn = block.attn
    keys = [("head", layer, h) for h in range(z.shape[0])]
    parts: Parts = {}
    if merge is not None and len({merge(k) for k in keys}) == 1:
        joined = out.double() if attn.b_O is None else out.double() - attn.b_O.detach(
        ).double().cpu()
        _add(parts, keys[0], joined, merge)  # [pos, d_model]
    else:
        z = z.double()
        w_o = attn.W_O.detach().double().cpu()  # [head, d_head, d_model]
        per_head = torch.einsum("hpd,hdm->hpm", z, w_o)  # [head, pos, d_model]
        for h, key in enumerate(keys):
            _add(parts, key, per_head[h], merge)
    if attn.b_O is not None:
        _add(parts, ("attn bias", layer), attn.b_O.detach().double().cpu().expand(
            z.shape[1], -1), merge)
    post = getattr(block, "ln1_post", None)
    return parts if post is None else freeze(post, parts, f"after attention {layer}", merge)


def _mlp_parts(block, out: torch.Tensor, layer: int, merge) -> Parts:
    """What block `layer`'s MLP added (its output [pos, d_model]): the output without its
    bias, and the bias; through Gemma's norm after the MLP (frozen) where it has one."""
    out = out.double()
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


def output_parts(model, cache, positions, merge: Callable | None = None) -> Parts:
    """The stream after the last block at `positions`, as parts (before any final norm)."""
    positions = torch.as_tensor(positions, dtype=torch.long)
    parts = embedding_parts(model, cache, positions, merge)
    for layer, block in enumerate(model.blocks):
        parts = _next_stream(model, block, cache, layer, positions, parts, merge)
    return parts


def _next_stream(model, block, cache, layer: int, positions, parts: Parts, merge) -> Parts:
    """The stream after block `layer`, as parts."""
    kind = model.cfg.block
    z, out, mlp_out = block_outputs(block, kind, cache, layer, positions)
    heads = _head_parts(block, z, out, layer, merge)
    if kind == "post_ln":
        parts = freeze(block.ln1, _join(parts, heads), f"after attention {layer}", merge)
        if mlp_out is None:
            return parts
        return freeze(block.ln2, _join(parts, _mlp_parts(block, mlp_out, layer, merge)),
                      f"after MLP {layer}", merge)
    parts = _join(parts, heads)
    return parts if mlp_out is None else _join(parts, _mlp_parts(block, mlp_out, layer, merge))
