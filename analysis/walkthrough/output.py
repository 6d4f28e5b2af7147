"""The walkthrough's last steps: the stack of layers, then the model's head (the pooler on
[CLS] for an encoder; the final norm, the unembedding and next-token probabilities for a decoder).
"""

from __future__ import annotations

import torch

from .steps import BTD, EVERY_LAYER_OUTPUT, Shown, Walk


def stack_step(w: Walk) -> None:
    n = w.cfg.n_layers
    names = [w.names.resid(0, "pre")] + w.names.every_layer("resid", "post")
    stack = torch.stack([w.hook(name) for name in names], dim=1)  # [batch, layer, pos, d_model]
    w.add("stack", "All layers", (f"Repeat for all {n} layers" if n > 2 else
                                          "Repeat for both layers" if n == 2 else
                                          "One layer in all"),
          (f"The same block runs {n} times, each time with its own weights; each layer's output "
           "is the next one's input. Move the layer slider to walk through another layer."
           if n > 1 else "This model has a single layer: its output is the stream below."),
          "The figure shows the length of every token's vector after each layer: the stream "
          "keeps its shape while its contents change.",
          r"X^{(\ell+1)} = \text{Block}_\ell(X^{(\ell)}),\quad \ell = 0, \dots, L-1",
          [Shown("all layers", stack, ("batch", "layer", "pos", "d_model"),
                 EVERY_LAYER_OUTPUT, f"`torch.stack([{names[0]}, {names[1]}, …], dim=1)`",
                 "stacked, from the embeddings to the last layer"),
           Shown("vector lengths", stack.norm(dim=-1), ("batch", "layer", "pos"),
                 EVERY_LAYER_OUTPUT, "`stack.norm(dim=-1)`",
                 "stacked, and the length of every vector taken")], "stack")


def end_steps(w: Walk) -> None:
    cfg, last = w.cfg, w.names.resid(w.cfg.n_layers - 1, "post")
    if w.has(w.names.final_norm(required=False)):
        w.add("final_norm", "Output", f"Final {w.norm}",
              "After the last layer, a pre-LN model normalizes the stream once more.",
              "Every layer added to the stream without normalizing it, so its scale has grown; "
              "this norm prepares it for the unembedding.", w.norm_formula,
              [w.shown("final", w.names.final_norm(), BTD)], "values")
    if w.has(w.names.logits(required=False)):
        logits = w.hook(w.names.logits())  # [batch, pos, vocab]
        w.add("unembed", "Output", "Unembedding to logits",
              f"A linear map scores all {cfg.d_vocab:,} vocabulary entries at every position."
              + (" Its weights are the token embedding table, reused (tied)."
                 if cfg.tie_embeddings else ""),
              "Row j is the model's guess for the token after position j, which the causal "
              "mask kept it from seeing.", r"\text{logits} = X_{\text{final}}\, W_U",
              [w.shown("logits", w.names.logits(), ("batch", "pos", "vocab"))])
        last_real = w.trace.attention_mask.sum(dim=1).clamp(min=1) - 1  # [batch]
        probs = logits[torch.arange(logits.shape[0]), last_real].softmax(-1)  # [batch, vocab]
        w.add("next_token", "Output", "Next-token probabilities",
              "The softmax of the last real token's logits: the model's probabilities for the "
              "next token. The bars show the most likely ones.",
              "Generation picks one (the most likely, or a random draw), appends it and runs "
              "again. Right padding is skipped: each text uses its own last real token.",
              r"p(t_T \mid t_{<T}) = \operatorname{softmax}(\text{logits}_{T-1})",
              [Shown("probabilities", probs, ("batch", "vocab"), w.names.logits(),
                     "`hook_logits[b, last real position of b].softmax(-1)`",
                     "turned into probabilities (a softmax) at the last real token",
                     probability=True)], "top")
        return
    w.add("output", "Output", "The encoder's output",
          "The last layer's output is the model's result: one contextual vector per token.",
          "A task head reads these vectors: a classifier, a span finder, a sentence embedding.",
          r"H = X^{(L)}", [w.shown("last hidden state", last, BTD)], "values")
    if w.has(w.names.pooler(required=False)):
        w.add("pooler", "Output", "[CLS] and the pooler",
              "BERT keeps the first token's vector ([CLS]) as a summary of the input and passes "
              "it through a dense layer and tanh: one vector per text.",
              "A classifier fine-tuned on BERT (for example one that tells a positive review "
              "from a negative one) reads this pooled vector. Sentence "
              "models like all-MiniLM-L6-v2 ignore the pooler and average the token vectors.",
              r"p = \tanh\big(W_p\, h_{[\mathrm{CLS}]} + b_p\big)",
              [Shown("[CLS] vector", w.hook(last)[:, 0], ("batch", "d_model"), last,
                     "`[:, 0]`, the first position", "only its first position ([CLS])"),
               w.shown("pooled", w.names.pooler(), ("batch", "d_model"))])
