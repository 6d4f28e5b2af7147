"""One way to run the engine with hooks, for every analysis: `run_with_hooks`.

It takes token ids (or, from a start layer, a residual stream), the hooks to apply, which
hook points to keep, and which stack to run: the whole model, or an encoder–decoder's
encoder or decoder. It returns (output, cache). As everywhere in the engine, the hooks live
in a context variable for the length of the call (model/hooks.py), so the shared model is
never changed. The run is under no_grad unless `grad=True`, which leaves the caller's own
setting: gradients then reach tensors the caller made (a copy of the embeddings put in by a
hook, say); the parameters are only read.

    out, cache = run_with_hooks(loaded, ids, keep=names.every_layer("attn", "z"))
    out, _ = run_with_hooks(loaded, resid=x, start=3, hooks=[(name, patch)], head=False)
    logits, cache = run_with_hooks(loaded, dec, stack="decoder", memory=m, memory_mask=mm)

For an encoder–decoder, `encode_source` encodes a source once for the decoder's runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable

import torch

from .hooks import caching_hook
from .hooks import hooks as hooks_active_in
from .runner import LoadedModel
from .transformer import ModelOutput

STACKS = ("model", "encoder", "decoder")
Keep = Callable[[str], bool] | Collection[str] | None


def _module(model) -> torch.nn.Module:
    """The engine module: a LoadedModel's `.model`, or a module given as it is."""
    return model.model if isinstance(model, LoadedModel) else model


def _kept(names: Iterable[str], keep) -> list[str]:
    if keep is None:
        return []
    wanted = keep if callable(keep) else set(keep).__contains__
    return [n for n in names if wanted(n)]


def run_with_hooks(model, ids: torch.Tensor | None = None, *, hooks: Iterable = (),
                   keep: Keep = None,
                   attention_mask: torch.Tensor | None = None,
                   token_type_ids: torch.Tensor | None = None, start: int = 0,
                   resid: torch.Tensor | None = None, head: bool = True, stack: str = "model",
                   decoder_ids: torch.Tensor | None = None, memory: torch.Tensor | None = None,
                   memory_mask: torch.Tensor | None = None, grad: bool = False):
    """Run `model` (a LoadedModel or an engine module) with `hooks` ((name or predicate, fn)
    pairs, model/hooks.py) and keep the hook points `keep` accepts (a predicate or a set of
    names; each tensor detached, same storage, after the hooks edited it). Returns (output,
    cache: hook name -> tensor).

    stack "model": ids [batch, pos] through the whole model (with decoder_ids [batch, out_pos]
    an encoder–decoder's decoder too); or, with `resid` [batch, pos, d_model], block `start`'s
    input, the blocks from `start` on (the model's forward_from). head=False stops at the
    final norm (no logits: a batch of patched copies does not need them). The output is the
    model's own (ModelOutput; an encoder–decoder's EncoderDecoderOutput).
    stack "encoder": an encoder–decoder's encoder alone (ids, or resid from `start`); the
    output is a ModelOutput whose `final` is the memory the decoder reads.
    stack "decoder": an encoder–decoder's decoder on ids [batch, out_pos] over `memory`
    [1 or batch, src_pos, d_model] with `memory_mask` (`encode_source`); the output is the
    logits [batch, out_pos, vocab].
    attention_mask, token_type_ids: [batch, pos], default all ones and all zeros.
    """
    if stack not in STACKS:
        raise ValueError(f"stack must be one of {STACKS}, got {stack!r}")
    module = _module(model)
    if stack != "model" and not hasattr(module, "decoder"):
        raise ValueError(f"the {stack} stack is an encoder–decoder's; this model has one stack")
    if stack == "decoder" and memory is None:
        raise ValueError("the decoder stack reads an encoded source: pass memory and "
                         "memory_mask (encode_source)")
    cache: dict[str, torch.Tensor] = {}
    store = caching_hook(cache)
    fns = [*hooks, *((n, store) for n in _kept(module.hook_names, keep))]
    quiet = contextlib.nullcontext() if grad else torch.no_grad()
    # no hooks, no context: every hook point then returns its tensor at once
    hooked = hooks_active_in(module.hook_names, fns) if fns else contextlib.nullcontext()
    with quiet, hooked:
        out = _forward(module, stack, ids, attention_mask, token_type_ids, start, resid, head,
                       decoder_ids, memory, memory_mask)
    return out, cache


def _forward(module, stack, ids, attention_mask, token_type_ids, start, resid, head,
             decoder_ids, memory, memory_mask):
    if stack == "decoder":
        return module.decoder(ids, memory.expand(ids.shape[0], -1, -1), memory_mask)
    if attention_mask is None:
        shape = ids.shape if resid is None else resid.shape[:2]
        device = (ids if resid is None else resid).device
        attention_mask = torch.ones(shape, dtype=torch.long, device=device)
    if stack == "encoder":
        if resid is None:
            residual, final = module.encode(ids, attention_mask)
            return ModelOutput(residual=residual, final=final, logits=None, pooled=None)
        return module.forward_from(start, resid, attention_mask)
    if decoder_ids is not None:
        return module(ids, attention_mask, decoder_input_ids=decoder_ids)
    if resid is None:
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(ids)
        if head:
            return module(ids, attention_mask, token_type_ids)
        resid = module.embed(ids, token_type_ids)  # [batch, pos, d_model]
    if head:
        return module.forward_from(start, resid, attention_mask)
    x = module.run_blocks(resid, attention_mask, start=start)  # [batch, pos, d_model]
    return ModelOutput(residual=x, final=module.final(x), logits=None, pooled=None)


def encode_source(model, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """An encoder–decoder's source src [1, src_pos] encoded once: (memory [1, src_pos,
    d_model], memory_mask [1, 1, 1, src_pos]) for the decoder's runs (stack "decoder")."""
    module = _module(model)
    mask = torch.ones_like(src)  # [1, src_pos]
    with torch.no_grad():
        _, memory = module.encode(src, mask)
    return memory, module.memory_mask(mask, memory.dtype)
