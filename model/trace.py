"""What one run of the model produced: tokens, and every hook point's tensor."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar
from functools import cached_property

import torch

from .config import TransformerConfig


class TraceCache(Mapping):
    """Hook name -> tensor, where some entries are computed on first access from other
    entries, with the forward pass's own function (runner.lazy_recipes: q, k and v from the
    attention's input, q·k from q and k, the scores from q·k, z from the pattern and v, a
    norm's output from its input, ...), so they equal bit for bit what the forward pass
    computed but are not held in memory until something reads them. An entry may read
    another recomputed one: reading a block's last part recomputes the block once."""

    def __init__(self, names, tensors, derived) -> None:
        self._names = list(names)  # hook order
        self._tensors = tensors
        self._derived = derived  # name -> (function, names of the entries it is applied to)
        self._lock = threading.RLock()  # a recipe may read another derived entry

    def __getitem__(self, name: str) -> torch.Tensor:
        tensor = self._tensors.get(name)
        if tensor is not None:
            return tensor
        if name not in self._derived:
            raise KeyError(name)
        with self._lock:
            if name not in self._tensors:
                fn, sources = self._derived[name]
                with torch.no_grad():
                    self._tensors[name] = fn(*(self[source] for source in sources))
            return self._tensors[name]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name) -> bool:
        return name in self._tensors or name in self._derived


@dataclass(eq=False)
class Trace:
    """The record of one forward pass. Every tensor is float32 (or int64) on the CPU.

    `cache` maps each hook point's name to its tensor with the batch dimension kept
    (`cache["blocks.0.attn.hook_pattern"]` is [batch, head, q_pos, k_pos]). The convenience
    fields drop the batch dimension when a single text was run.
    """

    # What the trace is, for code that shows it: "transformer" (one stack: an encoder or a
    # decoder) or "encoder_decoder" (EncoderDecoderTrace: also the decoder and cross-attention).
    kind: ClassVar[str] = "transformer"
    model_name: str
    cfg: TransformerConfig
    batch_tokens: list[list[str]]  # [batch][pos]
    input_ids: torch.Tensor  # [batch, pos]
    attention_mask: torch.Tensor  # [batch, pos]
    token_type_ids: torch.Tensor  # [batch, pos]
    special_mask: torch.Tensor  # [batch, pos]
    dropped: list[int]  # tokens cut from each text to fit the context
    cache: dict[str, torch.Tensor]
    batched: bool
    logits: torch.Tensor | None = None  # [batch, pos, vocab]
    pooled: torch.Tensor | None = None  # [batch, d_model]
    final: torch.Tensor | None = None  # [batch, pos, d_model], after the final norm
    notice: str | None = None  # e.g. "CUDA ran out of memory; this run used the CPU"
    texts: list[str] = field(default_factory=list)
    # [batch][k]: positions of special tokens typed inside the text (model/tokenizer.py: a
    # special id is special wherever it came from); empty lists when there are none
    typed_special: list[list[int]] = field(default_factory=list)

    def _unbatch(self, x):
        return x if self.batched else x[0]

    @property
    def tokens(self) -> list[str] | list[list[str]]:
        return self._unbatch(self.batch_tokens)

    @property
    def token_ids(self) -> torch.Tensor:
        return self._unbatch(self.input_ids)

    @property
    def n_dropped(self) -> int | list[int]:
        return self._unbatch(self.dropped)

    @property
    def n_tokens(self) -> int:
        return self.input_ids.shape[1]

    def layer_names(self, hook: str) -> list[str]:
        return [f"blocks.{i}.{hook}" for i in range(self.cfg.n_layers)]

    @cached_property
    def attentions(self) -> torch.Tensor:
        """[n_layers, head, q_pos, k_pos], or [batch, n_layers, head, q_pos, k_pos] for a batch."""
        names = self.layer_names("attn.hook_pattern")
        stacked = torch.stack([self.cache[n] for n in names], 1)  # [batch, layer, head, q, k]
        store = getattr(self.cache, "_tensors", self.cache)
        if isinstance(store, dict):  # keep one copy of the patterns, not two: views into it
            for i, name in enumerate(names):
                store[name] = stacked[:, i]
        return self._unbatch(stacked)

    @cached_property
    def hidden_states(self) -> torch.Tensor:
        """The residual stream before block 0 and after each block (before any final norm):
        [n_layers + 1, pos, d_model], or with a leading batch dimension for a batch."""
        names = ["blocks.0.hook_resid_pre"] + self.layer_names("hook_resid_post")
        return self._unbatch(torch.stack([self.cache[n] for n in names], 1))

    @property
    def nbytes(self) -> int:
        """Memory held by this trace's tensors (shared storage counted once)."""
        tensors = list(getattr(self.cache, "_tensors", self.cache).values())
        tensors += [t for t in (self.logits, self.pooled, self.final, self.input_ids,
                                self.attention_mask, self.token_type_ids, self.special_mask,
                                self.__dict__.get("attentions"), self.__dict__.get("hidden_states"))
                    if t is not None]
        storages = {}
        for t in tensors:
            storage = t.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        return sum(storages.values())

    def attention(self, layer: int, head: int, item: int = 0) -> torch.Tensor:
        """One head's pattern, [q_pos, k_pos]."""
        return self.cache[f"blocks.{layer}.attn.hook_pattern"][item, head]


@dataclass(eq=False)
class EncoderDecoderTrace(Trace):
    """A Trace of the encoder (tokens = the source text), plus the decoder's side.

    The decoder ran greedily until EOS, then once more on its own output to record it:
    decoder row t reads decoder_tokens[t] and writes output_tokens[t].
    """

    kind: ClassVar[str] = "encoder_decoder"
    dec_cfg: TransformerConfig | None = None
    decoder_tokens: list[list[str]] = field(default_factory=list)  # [batch][out_pos]
    output_tokens: list[list[str]] = field(default_factory=list)  # [batch][out_pos]
    outputs: list[str] = field(default_factory=list)  # the decoded text of each item
    decoder_logits: torch.Tensor | None = None  # [batch, out_pos, vocab]
    decoder_ids: torch.Tensor | None = None  # [batch, out_pos], what decoder_tokens name

    def _decoder_stack(self, hook: str) -> torch.Tensor:
        names = [f"decoder.blocks.{i}.{hook}" for i in range(self.dec_cfg.n_layers)]
        return self._unbatch(torch.stack([self.cache[n] for n in names], 1))

    @property
    def cross_attentions(self) -> torch.Tensor:
        """[dec_layers, head, out_pos, src_pos] (batch first for a batch): rows are decoder
        positions, columns the source tokens, each row a softmax over the source."""
        return self._decoder_stack("cross_attn.hook_pattern")
