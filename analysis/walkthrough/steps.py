"""The forward pass as a classroom walkthrough: an ordered list of steps over one full Trace.

Each `Step` shows one or a few real tensors (`Shown`): what the step does, a longer teacher's
note, the formula, and where the tensor came from (a hook name, or a Trace field). Shapes are
read from the tensors, never written here. Where the tensor on screen is not a hook tensor
itself (Q as one [batch, seq, d_model] matrix before the head split, the transposed key, the
scores before the mask) it is derived from the real hook tensor by a reshape, a transpose or
the forward pass's own arithmetic, and `Shown.how` says which.

Two orders, chosen by the config: post-LN encoders (BERT: embeddings and LayerNorm, attention,
add & norm, feed-forward, add & norm, pooler on [CLS]) and pre-LN decoders (GPT-2, Llama: norm
first, causal mask, final norm, unembedding, next-token probabilities).

The steps inside one layer (attention, then the feed-forward network) are built in
model/walkthrough_layer.py; import everything from this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .trace import Trace

BLOCKED = torch.finfo(torch.float32).min / 2  # the model writes −∞ as float32's minimum
BTD = ("batch", "seq", "d_model")
BHQK = ("batch", "heads", "q_pos", "k_pos")
LN = r"\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta"
RMS = r"\mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\operatorname{mean}(x^2) + \varepsilon}}"
JOIN = "`{}.transpose(1, 2).reshape(batch, seq, {}·d_head)`"


@dataclass(frozen=True)
class Shown:
    """One real tensor on screen. `source`: the hook name (or `trace.<field>`) it comes from;
    `how`: the reshape, transpose or arithmetic that derives it from the source ("" if none)."""

    label: str
    tensor: torch.Tensor
    dims: tuple[str, ...]
    source: str
    how: str = ""

    def __post_init__(self) -> None:
        if len(self.dims) != self.tensor.dim():
            raise ValueError(f"{self.label}: {len(self.dims)} dim names {self.dims} for a "
                             f"tensor of shape {list(self.tensor.shape)}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)


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


class _Walk:
    def __init__(self, trace: Trace) -> None:
        self.trace, self.cfg, self.steps = trace, trace.cfg, []
        self.pre_ln = trace.cfg.block == "pre_ln"
        self.norm = "RMSNorm" if trace.cfg.norm == "rmsnorm" else "LayerNorm"
        self.norm_formula = RMS if trace.cfg.norm == "rmsnorm" else LN

    def hook(self, name: str) -> torch.Tensor:
        if name not in self.trace.cache:
            raise ValueError(f"the walkthrough needs a full trace (run with keep=None); this "
                             f"one has no {name!r}")
        return self.trace.cache[name]

    def has(self, name: str) -> bool:
        return name in self.trace.cache

    def add(self, key, group, title, summary, teacher, formula, shown, figure=None, layer=None):
        self.steps.append(Step(key, group, title, summary, teacher, formula, tuple(shown),
                               figure, layer))

    def shown(self, label: str, name: str, dims: tuple[str, ...]) -> Shown:
        return Shown(label, self.hook(name), dims, name)


# ------------------------------------------------------------------------ input, embeddings
def _input_steps(w: _Walk) -> None:
    t, cfg = w.trace, w.cfg
    n_pad = int((t.attention_mask == 0).sum())
    n_special = int((t.special_mask.bool() & t.attention_mask.bool()).sum())
    w.add("tokens", "Input", "Text → tokens → ids",
          f"The tokenizer cuts the text into pieces and looks each one up in a vocabulary of "
          f"{cfg.d_vocab:,} entries, adding {n_special} special token(s). The model sees only "
          f"these integers: one row per text, {t.n_tokens} positions.",
          "A token is a word, a piece of a word or a punctuation mark; its id is a row number "
          "in the embedding table. BERT-style models add [CLS] at the start and [SEP] after each "
          "sentence, GPT-2 adds nothing, Llama a beginning-of-sequence token. Texts that share "
          "a batch must have one length, so the shorter ones are padded on the right.",
          r"\text{text} \xrightarrow{\text{tokenizer}} (t_0, \dots, t_{T-1}) \mapsto "
          r"\text{ids} \in \{0, \dots, V-1\}^{B \times T}",
          [Shown("input ids", t.input_ids, ("batch", "seq"), "trace.input_ids")], "tokens")
    w.add("attention_mask", "Input", "The attention mask",
          "1 marks a real token, 0 a padding token that only fills a row up to the batch's "
          "length. " + (f"Here {n_pad} position(s) are padding." if n_pad else
                        "All ones: nothing is padded in this input."),
          "Padding makes the tensor rectangular but must not change the result. Inside every "
          "attention layer the mask becomes a matrix with −∞ in the padded columns, so after "
          "the softmax no token gives any weight to padding. Padding tokens still get vectors "
          "of their own; they are simply never looked at.",
          r"m_{b,j} = \begin{cases} 1 & \text{token } j \text{ of text } b \text{ is real} \\ "
          r"0 & \text{padding} \end{cases}",
          [Shown("attention mask", t.attention_mask, ("batch", "seq"), "trace.attention_mask")],
          "tokens")
    if cfg.n_token_types:
        w.add("token_types", "Input", "Token types (segments)",
              f"Type 0 marks the first sentence, type 1 the second; here "
              f"{int(t.token_type_ids.sum())} position(s) have type 1.",
              "BERT was trained on sentence pairs (does B follow A? does this answer fit the "
              "question?). The type tells each token which sentence it belongs to.",
              r"\text{type}_{b,j} \in \{0, 1\}",
              [Shown("token type ids", t.token_type_ids, ("batch", "seq"),
                     "trace.token_type_ids")], "tokens")


def _embedding_steps(w: _Walk) -> None:
    cfg = w.cfg
    rope = (" A rotary model adds no position vector: positions enter inside attention, where "
            "q and k are rotated by an angle that grows with the position (RoPE)."
            if cfg.positions == "rotary" else "")
    w.add("embed_tok", "Embeddings", "Token embeddings",
          f"Each id picks one row of the token embedding table W_E [{cfg.d_vocab:,}, "
          f"{cfg.d_model}]: a learned vector of d_model numbers.{rope}",
          "Looking up a row is the same as multiplying a one-hot vector by W_E. Tokens used in "
          "similar ways end up with similar rows."
          + (" The original transformer multiplies by √d_model so the embeddings are not "
             "drowned by the positional encoding." if cfg.embed_scale else ""),
          r"E_{\text{tok}}[b, j] = " + (r"\sqrt{d_{model}}\," if cfg.embed_scale else "")
          + r"W_E[\text{ids}_{b,j}]", [w.shown("token embedding", "embed.hook_tok", BTD)],
          "values")
    if w.has("embed.hook_type"):
        w.add("embed_type", "Embeddings", "Token type embeddings",
              f"Each token type picks a row of a small table with {cfg.n_token_types} rows.",
              "With a single sentence every token gets row 0: the same vector everywhere.",
              r"E_{\text{type}}[b, j] = W_{\text{type}}[\text{type}_{b,j}]",
              [w.shown("token type embedding", "embed.hook_type", BTD)], "values")
    if w.has("embed.hook_pos"):
        learned = cfg.positions == "learned"
        w.add("embed_pos", "Embeddings", "Position embeddings" if learned else
              "Positional encoding",
              f"Position j picks row j of a learned table of {cfg.n_ctx + cfg.position_offset} "
              "rows, so one word at two places gets two vectors." if learned else
              "A fixed table of sines and cosines of different frequencies, one row per "
              "position; nothing here is learned.",
              "Without positions, attention could not tell 'dog bites man' from 'man bites "
              "dog'. The table is [seq, d_model], added to every text of the batch; the hook "
              "records it already broadcast to [batch, seq, d_model]."
              + (" RoBERTa numbers positions from the padding id + 1." if cfg.position_offset
                 else ""),
              r"E_{\text{pos}}[b, j] = W_{\text{pos}}[j]" if learned else
              r"PE_{j,2i} = \sin\big(j / 10000^{2i/d}\big),\;PE_{j,2i+1} = "
              r"\cos\big(j / 10000^{2i/d}\big)",
              [w.shown("position embedding", "embed.hook_pos", BTD)], "values")
    if w.has("embed.hook_sum"):
        parts = " + ".join(rf"E_{{\text{{{p}}}}}" for p in ("tok", "type", "pos")
                           if w.has(f"embed.hook_{p}"))
        w.add("embed_sum", "Embeddings", "Sum of the embeddings",
              "The parts are added number by number: one vector per token that knows both what "
              "the token is and where it stands.",
              "Adding rather than concatenating keeps the width at d_model; training learns to "
              "keep the parts in different directions. Dropout would follow in training; at "
              "inference it does nothing.", rf"X = {parts}",
              [w.shown("sum", "embed.hook_sum", BTD)], "values")
    if w.has("embed.ln.hook_normalized"):
        w.add("embed_norm", "Embeddings", f"{w.norm} of the embeddings",
              f"{w.norm} rescales each token's vector to mean 0 and variance 1, then applies a "
              "learned gain γ and bias β. Dropout comes next in the code but does nothing at "
              "inference, so this is the embeddings' output.",
              "The statistics are taken over the d_model numbers of one token, never across "
              "tokens or texts.", w.norm_formula,
              [w.shown("normalized embeddings", "embed.ln.hook_normalized", BTD)], "values")


# ---------------------------------------------------------------------------- the stack, end
def _stack_step(w: _Walk) -> None:
    n = w.cfg.n_layers
    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.hook_resid_post" for i in range(n)]
    stack = torch.stack([w.hook(name) for name in names], dim=1)  # [batch, layer, seq, d_model]
    w.add("stack", "All layers", f"Repeat for all {n} layers",
          f"The same block runs {n} times, each time with its own weights; each layer's output "
          "is the next one's input. Move the layer slider to walk through another layer.",
          "The figure shows the length of every token's vector after each layer: the stream "
          "keeps its shape while its contents change.",
          r"X^{(\ell+1)} = \text{Block}_\ell(X^{(\ell)}),\quad \ell = 0, \dots, L-1",
          [Shown("all layers", stack, ("batch", "layer", "seq", "d_model"),
                 "blocks.*.hook_resid_post", "`torch.stack([blocks.0.hook_resid_pre, "
                 "blocks.0.hook_resid_post, …], dim=1)`"),
           Shown("vector lengths", stack.norm(dim=-1), ("batch", "layer", "seq"),
                 "blocks.*.hook_resid_post", "`stack.norm(dim=-1)`")], "stack")


def _end_steps(w: _Walk) -> None:
    cfg, last = w.cfg, f"blocks.{w.cfg.n_layers - 1}.hook_resid_post"
    if w.has("ln_final.hook_normalized"):
        w.add("final_norm", "Output", f"Final {w.norm}",
              "After the last layer, a pre-LN model normalizes the stream once more.",
              "Every layer added to the stream without normalizing it, so its scale has grown; "
              "this norm prepares it for the unembedding.", w.norm_formula,
              [w.shown("final", "ln_final.hook_normalized", BTD)], "values")
    if w.has("hook_logits"):
        logits = w.hook("hook_logits")  # [batch, seq, vocab]
        w.add("unembed", "Output", "Unembedding to logits",
              f"A linear map scores all {cfg.d_vocab:,} vocabulary entries at every position."
              + (" Its weights are the token embedding table, reused (tied)."
                 if cfg.tie_embeddings else ""),
              "Row j is the model's guess for the token after position j, which the causal "
              "mask kept it from seeing.", r"\text{logits} = X_{\text{final}}\, W_U",
              [w.shown("logits", "hook_logits", ("batch", "seq", "vocab"))])
        last_real = w.trace.attention_mask.sum(dim=1).clamp(min=1) - 1  # [batch]
        probs = logits[torch.arange(logits.shape[0]), last_real].softmax(-1)  # [batch, vocab]
        w.add("next_token", "Output", "Next-token probabilities",
              "The softmax of the last real token's logits: the model's probabilities for the "
              "next token. The bars show the most likely ones.",
              "Generation picks one (the most likely, or a random draw), appends it and runs "
              "again. Right padding is skipped: each text uses its own last real token.",
              r"p(t_T \mid t_{<T}) = \operatorname{softmax}(\text{logits}_{T-1})",
              [Shown("probabilities", probs, ("batch", "vocab"), "hook_logits",
                     "`hook_logits[b, last real position of b].softmax(-1)`")], "top")
        return
    w.add("output", "Output", "The encoder's output",
          "The last layer's output is the model's result: one contextual vector per token.",
          "A task head reads these vectors: a classifier, a span finder, a sentence embedding.",
          r"H = X^{(L)}", [w.shown("last hidden state", last, BTD)], "values")
    if w.has("pooler.hook_out"):
        w.add("pooler", "Output", "[CLS] and the pooler",
              "BERT keeps the first token's vector ([CLS]) as a summary of the input and passes "
              "it through a dense layer and tanh: one vector per text.",
              "A classifier (seed 001's sentiment head) reads this pooled vector. Sentence "
              "models like all-MiniLM-L6-v2 ignore the pooler and average the token vectors.",
              r"p = \tanh\big(W_p\, h_{[\mathrm{CLS}]} + b_p\big)",
              [Shown("[CLS] vector", w.hook(last)[:, 0], ("batch", "d_model"), last,
                     "`[:, 0]`, the first position"),
               w.shown("pooled", "pooler.hook_out", ("batch", "d_model"))])


def walkthrough(trace: Trace, layer: int = 0) -> list[Step]:
    """Every step of the forward pass of `trace` (a full trace: run with keep=None), with the
    layer steps for `layer`, in the encoder (post-LN) or decoder (pre-LN) order."""
    if not 0 <= layer < trace.cfg.n_layers:
        raise ValueError(f"layer must be in [0, {trace.cfg.n_layers - 1}], got {layer}")
    from .walkthrough_layer import attention_steps, mlp_steps  # it builds on this module

    w = _Walk(trace)
    for build in (_input_steps, _embedding_steps):
        build(w)
    attention_steps(w, layer)
    mlp_steps(w, layer)
    _stack_step(w)
    _end_steps(w)
    return w.steps
