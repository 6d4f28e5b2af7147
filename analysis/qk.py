"""Where one row of an attention pattern comes from: q·k, the scaling, the mask, the softmax."""

from __future__ import annotations

import torch

from model.attention import allowed_keys, attention_scale, layer_window, scores_from
from model.hook_names import hook_names
from model.trace import Trace


def _hook(trace: Trace, layer: int, name: str) -> torch.Tensor:
    key = hook_names(trace.cfg).attn(layer, name)
    if key not in trace.cache:
        raise ValueError(f"the trace has no {key!r}; run the model without a `keep` filter")
    return trace.cache[key]


def qk_breakdown(trace: Trace, layer: int, head: int, query_pos: int, item: int = 0) -> dict:
    """Where one row of an attention pattern comes from, for one head and one query token.

    Returns a dict of numpy arrays and ints:
      q        [d_head]          the query vector (after rotation for rotary models)
      keys     [k_pos, d_head]   every key vector (after rotation), from the head's k/v head
      qk       [k_pos]           q·k for each key (the cache's hook_qk row)
      scaled   [k_pos]           q·k × scale (then Gemma 2's cap); masked keys -inf in this copy
      softmax  [k_pos]           softmax of the scaled row over keys (the hook_pattern row)
      masked   [k_pos] bool      keys the query may not see (padding; later tokens if causal;
                                 keys beyond a sliding window)
      layer, head, kv_head, query_pos, item, d_head, scale (1/sqrt(d_head) unless the model
      has its own), rotary (bool)

    With grouped-query attention each k/v head serves n_heads // n_kv_heads consecutive query
    heads, so query head h reads k/v head h // (n_heads // n_kv_heads).
    """
    cfg = trace.cfg
    n_batch, n_pos = trace.input_ids.shape
    for value, upper, what in ((layer, cfg.n_layers, "layer"), (head, cfg.n_heads, "head"),
                               (query_pos, n_pos, "query_pos"), (item, n_batch, "item")):
        if not 0 <= int(value) < upper:
            raise ValueError(f"{what} must be in [0, {upper}), got {value}")
    rotary = hook_names(cfg).attn(int(layer), "rot_q", required=False) in trace.cache
    kv_head = head // (cfg.n_heads // cfg.n_kv_heads)
    q = _hook(trace, int(layer), "rot_q" if rotary else "q")[item, head, query_pos]
    keys = _hook(trace, int(layer), "rot_k" if rotary else "k")[item, kv_head]
    q, keys = q.float(), keys.float()  # [d_head], [k_pos, d_head]
    qk = keys @ q  # [k_pos]
    scale = attention_scale(cfg)
    # the engine's own scaling (and Gemma 2's cap), with nothing added for the mask
    scaled = scores_from(qk, torch.zeros(()), scale, cfg.attn_softcap)  # [k_pos]
    window = layer_window(cfg, int(layer))
    allowed = trace.attention_mask[item].bool() & allowed_keys(n_pos, cfg.causal,
                                                               window)[query_pos]  # [k_pos]
    # The model adds float32's minimum rather than -inf (so a fully masked row stays finite);
    # the softmax below does the same, so it matches hook_pattern exactly.
    finite = torch.where(allowed, scaled, torch.tensor(torch.finfo(torch.float32).min))
    softmax = finite.softmax(dim=-1)  # [k_pos]
    shown = torch.where(allowed, scaled, torch.tensor(float("-inf")))  # [k_pos]
    return {
        "q": q.numpy().copy(), "keys": keys.numpy().copy(), "qk": qk.numpy(),
        "scaled": shown.numpy(), "softmax": softmax.numpy(), "masked": (~allowed).numpy(),
        "layer": int(layer), "head": int(head), "kv_head": int(kv_head),
        "query_pos": int(query_pos), "item": int(item), "d_head": cfg.d_head, "scale": scale,
        "rotary": rotary,
    }
