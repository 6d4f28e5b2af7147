"""The logit lens (nostalgebraist, 2020): read the residual stream as if it were the last layer.

After every layer, the residual stream goes through the model's own final norm and
unembedding, and a softmax over the vocabulary says which next token the model "leans to" at
that depth. After the last layer this is exactly the model's output distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.config import TransformerConfig


def lens_unavailable(cfg: TransformerConfig, model_name: str = "this model") -> str | None:
    """Why the lens does not apply to a model, or None when it does."""
    if cfg.has_lm_head:
        return None
    what = ("an encoder trained to produce sentence embeddings (all-MiniLM-L6-v2)"
            if model_name == "minilm" else "an encoder, trained to produce token vectors")
    return (f"The logit lens needs a language-model head: an unembedding from the residual "
            f"stream to one score per vocabulary token. {model_name} ({cfg.family}-style, "
            f"{cfg.n_layers} layers) is {what}, not to predict the next token, so it has no "
            "such head and there is no vocabulary distribution to read at any layer. Switch to "
            "a decoder that comes with the app (tiny-chars or tiny-induction), or load a GPT-2 "
            "or Llama-style model directory, to use this page.")


def lens_logits(model, resid: torch.Tensor) -> torch.Tensor:
    """Final norm (where the model has one) and unembedding:
    [..., pos, d_model] -> [..., pos, vocab]."""
    if model.unembed is None:
        raise ValueError(lens_unavailable(model.cfg))
    device = model.unembed.weight.device
    with torch.no_grad():
        x = resid.to(device, model.unembed.weight.dtype)  # [..., pos, d_model]
        return model.logits_from(x).float()  # [..., pos, vocab]


def lens_probs(model, resid: torch.Tensor) -> torch.Tensor:
    """Softmax over the vocabulary of `lens_logits`: [..., pos, vocab] on the model's device."""
    return lens_logits(model, resid).softmax(dim=-1)


@dataclass
class Lens:
    """The top tokens after each layer at each position, and how the true next token fares.

    Row 0 is the embeddings (before block 0); row l + 1 is after block l.
    """

    row_names: list[str]
    top_ids: torch.Tensor  # [row, pos, k]
    top_probs: torch.Tensor  # [row, pos, k]
    next_ids: torch.Tensor  # [pos], the token that really comes next; -1 at the last position
    next_rank: torch.Tensor  # [row, pos], 1 = the lens's top token; 0 where there is no next
    next_prob: torch.Tensor  # [row, pos], NaN where there is no next token

    @property
    def n_rows(self) -> int:
        return self.top_ids.shape[0]


def logit_lens(model, hidden_states: torch.Tensor, input_ids: torch.Tensor,
               k: int = 5, n_real: int | None = None) -> Lens:
    """The lens over every layer of one text.

    hidden_states: [n_layers + 1, pos, d_model], the residual stream before block 0 and after
    each block (a Trace's `hidden_states`); input_ids: [pos]; n_real: real (unpadded) tokens.
    The full [pos, vocab] distribution is built one row at a time, so memory stays
    [pos, vocab] however many layers there are.
    """
    n_rows, n_pos, _ = hidden_states.shape
    ids = torch.as_tensor(input_ids).reshape(-1)  # [pos]
    if ids.numel() != n_pos:
        raise ValueError(f"input_ids has {ids.numel()} tokens but hidden_states {n_pos} positions")
    n_real = n_pos if n_real is None else int(n_real)
    k = max(1, min(int(k), model.cfg.d_vocab))
    next_ids = torch.full((n_pos,), -1, dtype=torch.long)  # [pos]
    next_ids[: max(n_real - 1, 0)] = ids[1:n_real]
    has_next = next_ids >= 0  # [pos]
    top_ids = torch.empty(n_rows, n_pos, k, dtype=torch.long)
    top_probs = torch.empty(n_rows, n_pos, k)
    next_rank = torch.zeros(n_rows, n_pos, dtype=torch.long)
    next_prob = torch.full((n_rows, n_pos), float("nan"))
    for row in range(n_rows):
        probs = lens_probs(model, hidden_states[row]).cpu()  # [pos, vocab]
        values, indices = probs.topk(k, dim=-1)  # [pos, k]
        top_ids[row], top_probs[row] = indices, values
        true = probs.gather(-1, next_ids.clamp_min(0)[:, None])[:, 0]  # [pos]
        rank = (probs > true[:, None]).sum(-1) + 1  # [pos]
        next_rank[row] = torch.where(has_next, rank, torch.zeros_like(rank))
        next_prob[row] = torch.where(has_next, true, torch.full_like(true, float("nan")))
    names = ["embeddings"] + [f"after layer {i}" for i in range(n_rows - 1)]
    return Lens(names, top_ids, top_probs, next_ids, next_rank, next_prob)
