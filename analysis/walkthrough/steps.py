"""The forward pass as a classroom walkthrough: an ordered list of steps over one full Trace.

Each `Step` shows one or a few real tensors (`Shown`): what the step does, a longer teacher's
note, the formula, and where the tensor came from (a hook name, or a Trace field). Shapes are
read from the tensors, never written here. Where the tensor on screen is not a hook tensor
itself (Q as one [batch, pos, d_model] matrix before the head split, the transposed key, the
scores before the mask) it is derived from the real hook tensor by a reshape, a transpose or
the forward pass's own arithmetic, and `Shown.how` says which.

Two orders, chosen by the config: post-LN encoders (BERT: embeddings and LayerNorm, attention,
add & norm, feed-forward, add & norm, pooler on [CLS]) and pre-LN decoders (GPT-2, Llama: norm
first, causal mask, final norm, unembedding, next-token probabilities).

This module holds what every stage shares: `Shown`, `Step`, `Preview` and the `Walk` builder.
The stages, in the order of the forward pass: inputs.py (tokens, ids, mask, embeddings),
attention.py, mlp.py (one layer), output.py (the stack, the final norm and the head);
`walkthrough()` in __init__.py calls them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.attention import attention_scale, layer_mask, scores_from
from model.hook_names import hook_names, suffix
from model.trace import Trace

BLOCKED = torch.finfo(torch.float32).min / 2  # the model writes −∞ as float32's minimum
BTD = ("batch", "pos", "d_model")
BHQK = ("batch", "heads", "q_pos", "k_pos")
LN = r"\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta"
RMS = r"\mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\operatorname{mean}(x^2) + \varepsilon}}"
# Gemma stores its gain minus one
GEMMA_RMS = (r"\mathrm{RMSNorm}(x) = (1 + \gamma) \odot "
             r"\frac{x}{\sqrt{\operatorname{mean}(x^2) + \varepsilon}}")
JOIN = "`{}.transpose(1, 2).reshape(batch, pos, {}·d_head)`"


@dataclass(frozen=True)
class Shown:
    """One real tensor on screen. `source`: the hook name (or `trace.<field>`) it comes from;
    `how`: the reshape, transpose or arithmetic that derives it from the source ("" if none)."""

    label: str
    tensor: torch.Tensor
    dims: tuple[str, ...]
    source: str
    how: str = ""
    plain_how: str = ""  # `how` in plain words, for the learner ("" if none)
    probability: bool = False  # values are probabilities: shown as percentages

    def __post_init__(self) -> None:
        if len(self.dims) != self.tensor.dim():
            raise ValueError(f"{self.label}: {len(self.dims)} dim names {self.dims} for a "
                             f"tensor of shape {list(self.tensor.shape)}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)


# Plain words for what the learner sees (the hook names stay for "for the curious").
DIM_WORDS = {"batch": ("texts", "text"), "pos": ("positions", "position"),
             "q_pos": ("queries", "query"), "k_pos": ("keys", "key"),
             "heads": ("heads", "head"), "kv_heads": ("key/value heads", "key/value head"),
             "d_head": ("numbers per head", "number"), "d_model": ("numbers", "number"),
             "d_embed": ("numbers", "number"),
             "heads·d_head": ("numbers", "number"), "kv_heads·d_head": ("numbers", "number"),
             "d_mlp": ("numbers", "number"), "layer": ("layers", "layer"),
             "vocab": ("vocabulary entries", "vocabulary entry")}
EVERY_LAYER_OUTPUT = f"blocks.*.{suffix('resid', 'post')}"  # a source: the stack of layers
HOOK_WORDS = (  # (kind, what, words) of model.hook_names.suffix
    ("embed", "tok", "the token embeddings"), ("embed", "type", "the token type embeddings"),
    ("embed", "pos", "the position embeddings"), ("embed", "sum", "the sum of the embeddings"),
    ("embed", "ln", "the normalized embeddings"), ("embed", "project", "the widened embeddings"),
    ("resid", "pre", "the input"), ("norm", "ln1", "the norm before attention"),
    ("attn", "q", "the queries"), ("attn", "k", "the keys"), ("attn", "v", "the values"),
    ("attn", "rot_q", "the rotated queries"), ("attn", "rot_k", "the rotated keys"),
    ("attn", "qk", "the attention scores"), ("attn", "scores", "the masked attention scores"),
    ("attn", "pattern", "the attention pattern"), ("attn", "z", "the weighted values"),
    ("out", "attn", "the attention output"), ("resid", "mid", "the stream after attention"),
    ("norm", "ln2", "the norm before the feed-forward part"),
    ("mlp", "pre", "the feed-forward part, before the activation"),
    ("mlp", "pre_linear", "the feed-forward up-projection"),
    ("mlp", "post", "the feed-forward part, after the activation"),
    ("out", "mlp", "the feed-forward output"), ("resid", "post", "the output"),
    ("final_norm", None, "the final norm"), ("logits", None, "the logits"),
    ("pooler", None, "the pooler's output"),
    ("norm", "q_norm", "the normalized queries"), ("norm", "k_norm", "the normalized keys"),
    ("norm", "ln1_post", "the norm after attention"),
    ("norm", "ln2_post", "the norm after the feed-forward part"),
)
SOURCE_WORDS = {
    "trace.input_ids": "the token ids from the tokenizer",
    "trace.attention_mask": "the attention mask from the tokenizer",
    "trace.token_type_ids": "the token types from the tokenizer",
    EVERY_LAYER_OUTPUT: "the output of every layer",
    **{suffix(kind, what): words for kind, what, words in HOOK_WORDS},
}


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 text", "2 texts"; `many` for irregular plurals."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def dim_words(dim: str, one: bool = False) -> str:
    """A dimension's name in plain words: "q_pos" -> "queries" (or "query" with one=True)."""
    base = dim.replace(" (broadcast)", "")
    words = DIM_WORDS.get(base, (base, base))
    return words[1] if one else words[0]


def where_from(shown: "Shown") -> str:
    """Where a tensor on screen comes from, in plain words (no hook names)."""
    name, layer = shown.source, ""
    if name.startswith("blocks.") and name[7:].split(".", 1)[0].isdigit():
        number, name = name[7:].split(".", 1)
        layer = f" (layer {number})"
    what = SOURCE_WORDS.get(name, "a tensor") + layer
    read = (f"Given to the model: {what}." if shown.source.startswith("trace.")
            else f"Read inside the model as it ran on your text: {what}.")
    if shown.how:
        read = read.rstrip(".") + f", then {shown.plain_how or 'worked out from it'}."
    return read


@dataclass(frozen=True)
class Step:
    key: str  # stable id, e.g. "qkv_proj"
    group: str  # "Input", "Embeddings", "Layer 2", "All layers", "Output"
    title: str
    summary: str  # one or two sentences, always shown
    teacher: str  # the longer explanation behind the teacher toggle
    formula: str  # LaTeX
    shown: tuple[Shown, ...]
    figure: str | None = None  # tokens, values, scores, mask, pattern, activation, stack, top
    layer: int | None = None
    symbols: str = ""  # the formula's letters in plain words, where they are not obvious


@dataclass(frozen=True)
class Preview:
    values: np.ndarray  # [rows, cols]: the first rows and columns of a 2-D slice
    row_dim: str
    col_dim: str
    n_rows: int  # full lengths of the two dimensions
    n_cols: int
    fixed: dict[str, int]  # leading dimensions, held at one index


def preview(shown: Shown, pick: dict[str, int] | None = None, rows: int = 6,
            cols: int = 8) -> Preview:
    """The first rows and columns of the real tensor. Dimensions before the last two are held
    at `pick[dim]` (e.g. {"batch": 1, "heads": 3}; clamped), else 0. The model's blocked cells
    come back as -inf."""
    x, fixed = shown.tensor, {}
    for dim in shown.dims[:-2]:
        fixed[dim] = min(max(int((pick or {}).get(dim, 0)), 0), x.shape[0] - 1)
        x = x[fixed[dim]]
    values = x[:rows, :cols].numpy()  # [rows, cols]
    if values.dtype.kind == "f":
        values = np.where(values <= BLOCKED, -np.inf, values)
    return Preview(values, shown.dims[-2], shown.dims[-1], x.shape[0], x.shape[1], fixed)


def top_tokens(probs: torch.Tensor, k: int = 10) -> tuple[list[int], list[float]]:
    """The k most likely ids of one probability row [vocab], most likely first."""
    top = torch.topk(probs, min(k, probs.shape[-1]))
    return top.indices.tolist(), top.values.tolist()


# q·k and the masked scores are [batch, head, pos, pos] per layer, two thirds of a full
# trace's memory at long texts; the walkthrough's run does not keep them (KEEP) and `derive`
# computes the one layer shown from the kept q and k, with the forward pass's own operations
# (the same numbers: tests/unit/test_walkthrough_memory.py).
DERIVED = (suffix("attn", "qk"), suffix("attn", "scores"))


def keep(name: str) -> bool:
    """The walkthrough's run keeps every hook but q·k and the scores (`derive` has them)."""
    return not name.endswith(DERIVED)


def derive(trace: Trace, name: str) -> torch.Tensor:
    """One layer's q·k (hook_qk) or masked scores (hook_scores) from its kept q and k (the
    rotated ones where the model rotates), as `Attention.attend` computes them."""
    names, cache = hook_names(trace.cfg), trace.cache
    layer = names.layer_of(name)
    plain_q, plain_k = names.attn(layer, "q"), names.attn(layer, "k")
    q = cache.get(names.attn(layer, "rot_q", required=False), cache.get(plain_q))  # [b, h, p, dh]
    k = cache.get(names.attn(layer, "rot_k", required=False), cache.get(plain_k))  # [b, kv, p, dh]
    if q is None or k is None:
        raise ValueError(f"the walkthrough needs {plain_q} and {plain_k} to show {name!r}")
    if q.shape[1] != k.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)  # [batch, head, pos, dh]
    qk = q @ k.transpose(-1, -2)  # [batch, head, q_pos, k_pos]
    if name == names.attn(layer, "qk"):
        return qk
    cfg = trace.cfg
    mask = layer_mask(cfg, layer, trace.attention_mask.to(qk.device), qk.dtype)
    return scores_from(qk, mask, attention_scale(cfg), cfg.attn_softcap)  # [batch, head, q, k]


class Walk:
    def __init__(self, trace: Trace) -> None:
        self.trace, self.cfg, self.steps = trace, trace.cfg, []
        self.names = hook_names(trace.cfg)  # every hook name the steps read
        # a norm before attention: pre-LN, and also GPT-NeoX's parallel and Gemma's sandwich
        self.block = trace.cfg.block
        self.pre_ln = trace.cfg.block != "post_ln"
        self.norm = "LayerNorm" if trace.cfg.norm == "layernorm" else "RMSNorm"
        self.norm_formula = {"layernorm": LN, "rmsnorm": RMS}.get(trace.cfg.norm, GEMMA_RMS)
        self._derived: dict[str, torch.Tensor] = {}  # q·k and scores of the layer shown

    def hook(self, name: str) -> torch.Tensor:
        if name in self.trace.cache:
            return self.trace.cache[name]
        if name.endswith(DERIVED) and name not in self._derived:
            self._derived[name] = derive(self.trace, name)
        if name not in self._derived:
            raise ValueError(f"the walkthrough needs a full trace (run with keep=KEEP); this "
                             f"one has no {name!r}")
        return self._derived[name]

    def has(self, name: str | None) -> bool:
        """Whether the run has `name` (None, a hook this model lacks: False)."""
        if name is None:
            return False
        layer = self.names.layer_of(name)
        return name in self.trace.cache or (name.endswith(DERIVED) and layer is not None
                                            and self.names.attn(layer, "q") in self.trace.cache)

    def add(self, key, group, title, summary, teacher, formula, shown, figure=None, layer=None,
            symbols=""):
        self.steps.append(Step(key, group, title, summary, teacher, formula, tuple(shown),
                               figure, layer, symbols))

    def shown(self, label: str, name: str, dims: tuple[str, ...]) -> Shown:
        return Shown(label, self.hook(name), dims, name)
