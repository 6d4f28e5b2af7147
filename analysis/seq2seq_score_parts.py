"""Why this score, in the decoder of an encoder–decoder (BART, Marian, T5, tiny-reverse).

The decoder's residual stream is a sum of parts too: its token embedding, its positions
(BART, Marian, tiny-reverse), every earlier self-attention head, every earlier
cross-attention head, every earlier MLP and the biases, through every norm with its scale
held at this run's value (analysis/stream_parts.py). So a decoder score splits like an
encoder's:

- **self-attention** (the output reads itself so far): query parts and key parts are both
  the decoder stream's, at two decoder positions; T5 adds its learned bias by distance, one
  more term, read from the engine's own mask.
- **cross-attention** (the output reads the source): the query's parts are the decoder
  stream's; the key is made from the encoder's output, the encoder's stream after its last
  norm (T5 and tiny-reverse: a final norm; BART and Marian: the last block's norm). With that
  norm's scale held at its value in this run, too, the key splits into the encoder's own
  parts (its embeddings, every encoder head and MLP, the biases).

Either way the grid of query-part × key-part terms adds up to the engine's pre-softmax
score up to float rounding. Read from one run's hook points; the model is never changed.
"""

from __future__ import annotations

import torch

from model.hook_names import hook_names

from .score_parts import CellParts, head_sides
from .stream_parts import Parts, _join, _mlp_parts, embedding_parts, freeze, output_parts

STACKS = ("encoder", "decoder", "cross")  # which attention of an encoder–decoder a cell is in


def needed_decoder(dec_cfg):
    """The decoder's hook names decompose_decoder_cell reads: its embeddings, every layer's
    self- and cross-attention z and scores, and every MLP's output."""
    names = hook_names(dec_cfg, decoder=True)
    wanted = {names.embed(part, required=False) for part in ("tok", "type", "pos", "sum")}
    for layer in range(dec_cfg.n_layers):
        wanted |= {names.attn(layer, "z"), names.attn(layer, "scores"),
                   names.cross_attn(layer, "z"), names.cross_attn(layer, "scores"),
                   names.out(layer, "mlp")}
    wanted.discard(None)
    return wanted


def _heads(attn, z: torch.Tensor, head_kind: str, bias_kind: str, layer: int) -> Parts:
    """One part per head (z · W_O[h]) and the output bias. z: [head, pos, d_head]."""
    w_o = attn.W_O.detach().double().cpu()  # [head, d_head, d_model]
    per_head = torch.einsum("hpd,hdm->hpm", z.double().cpu(), w_o)  # [head, pos, d_model]
    parts = {(head_kind, layer, h): per_head[h] for h in range(per_head.shape[0])}
    if attn.b_O is not None:
        parts[(bias_kind, layer)] = attn.b_O.detach().double().cpu().expand(z.shape[1], -1)
    return parts


def decoder_reads(model, cache, positions, layer: int, stack: str) -> Parts:
    """What the `stack` ("decoder": self-attention, "cross": cross-attention) of decoder layer
    `layer` reads at decoder `positions`, as parts that add up to it (frozen norms)."""
    dec = model.decoder
    names = hook_names(dec.cfg, decoder=True)
    positions = torch.as_tensor(positions, dtype=torch.long)
    parts = embedding_parts(dec, cache, positions, names=names)
    post = dec.cfg.block == "post_ln"
    for i, block in enumerate(dec.blocks[:layer + 1]):
        attn_in = parts if post else freeze(block.ln1, parts, f"before self-attention {i}")
        if i == layer and stack == "decoder":
            return attn_in
        z = cache[names.attn(i, "z")][0][:, positions]  # [head, pos, d_head]
        parts = _join(parts, _heads(block.attn, z, "head", "attn bias", i))
        if post:
            parts = freeze(block.ln1, parts, f"after self-attention {i}")
        cross_in = parts if post else freeze(block.ln_cross, parts,
                                             f"before cross-attention {i}")
        if i == layer:
            return cross_in
        z = cache[names.cross_attn(i, "z")][0][:, positions]  # [head, pos, d_head]
        parts = _join(parts, _heads(block.cross_attn, z, "cross head", "cross bias", i))
        if post:
            parts = freeze(block.ln_cross, parts, f"after cross-attention {i}")
        mlp_out = cache[names.out(i, "mlp")][0, positions]  # [pos, d_model]
        parts = _join(parts, _mlp_parts(block, mlp_out, i, None))
        if post:
            parts = freeze(block.ln2, parts, f"after MLP {i}")
    raise ValueError(f"decoder layer {layer} does not exist")


def memory_parts(model, cache, positions) -> Parts:
    """The encoder's output at source `positions` (what cross-attention makes its keys from),
    as the encoder's parts: its last stream through its final norm, the scale frozen."""
    parts = output_parts(model, cache, positions)
    final = getattr(model, "ln_final", None)
    return parts if final is None else freeze(final, parts, "at the encoder's end")


def _check(trace, dec_cfg, stack, layer, head, query, key) -> None:
    if stack not in STACKS[1:]:
        raise ValueError(f"choose the decoder's self-attention or its cross-attention, "
                         f"got {stack!r}")
    n_out, n_src = len(trace.decoder_tokens[0]), trace.n_tokens
    n_key = n_out if stack == "decoder" else n_src
    for what, value, top in (("decoder layer", layer, dec_cfg.n_layers),
                             ("decoder head", head, dec_cfg.n_heads),
                             ("query position", query, n_out), ("key position", key, n_key)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < top:
            raise ValueError(f"the {what} must be a whole number from 0 to {top - 1}, "
                             f"got {value!r}")
    if stack == "decoder" and key > query:
        raise ValueError(f"output token {query} cannot look at output token {key}: the "
                         "decoder writes left to right, so it only sees what it has written")


def decoder_mask(model, trace, stack: str) -> torch.Tensor:
    """The additive mask the engine gave the decoder's `stack` attention in this run, [1 or
    batch, 1 or head, q_pos or 1, k_pos]: causality and T5's bias by distance (self), the
    source's padding (cross)."""
    dtype = model.embed.W_E.weight.dtype
    with torch.no_grad():
        if stack == "decoder":
            return model.decoder.self_mask(trace.decoder_ids[:1], dtype).cpu()
        return model.memory_mask(trace.attention_mask[:1], dtype).cpu()


def decompose_decoder_cell(loaded, trace, stack: str, layer: int, head: int, query: int,
                           key: int) -> CellParts:
    """The score of (query, key) in head `head` of decoder layer `layer`'s self-attention
    (stack "decoder": two output positions) or cross-attention (stack "cross": an output
    position and a source position) in this run, taken apart.

    `trace` is one text's run of the encoder–decoder `loaded`, keeping the encoder's hooks
    score_parts.needed names and the decoder's needed_decoder names."""
    model = loaded.model
    dec_cfg = model.dec_cfg
    layer, head, query, key = (int(v) if hasattr(v, "__index__") and not isinstance(v, bool)
                               else v for v in (layer, head, query, key))
    _check(trace, dec_cfg, stack, layer, head, query, key)
    block = model.decoder.blocks[layer]
    attn = block.attn if stack == "decoder" else block.cross_attn
    names = hook_names(dec_cfg, decoder=True)
    masks = decoder_mask(model, trace, stack)[0]  # [1 or head, q_pos or 1, k_pos]
    mask = float(masks.expand(dec_cfg.n_heads, len(trace.decoder_tokens[0]), -1)[
        head, query, key])
    if stack == "decoder":
        reads = decoder_reads(model, trace.cache, [query, key], layer, stack)
        q_keys, q, k_keys, k = head_sides(attn, reads, head)
        q, k = q[:, 0], k[:, 1]  # [a, d_head], [b, d_head]
        score_name = names.attn(layer, "scores")
    else:
        q_keys, q, _, _ = head_sides(attn, decoder_reads(model, trace.cache, [query], layer,
                                                         stack), head)
        _, _, k_keys, k = head_sides(attn, memory_parts(model, trace.cache, [key]), head)
        q, k = q[:, 0], k[:, 0]  # [a, d_head], [b, d_head]
        score_name = names.cross_attn(layer, "scores")
    grid = attn.scale * (q @ k.T)  # [a, b]
    extra = {"relative position": mask} if stack == "decoder" and getattr(
        model.decoder, "rel_bias", None) is not None else {}
    return CellParts(
        layer=layer, head=head, query=query, key=key, tokens=list(trace.decoder_tokens[0]),
        q_keys=q_keys, k_keys=k_keys, grid=grid.numpy(), extra=extra,
        score=float(trace.cache[score_name][0, head, query, key]), scale=float(attn.scale),
        kv_head=head, shared_with=[head], stack=stack,
        key_tokens=list(trace.decoder_tokens[0] if stack == "decoder" else trace.tokens))
