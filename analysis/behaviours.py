"""What a decoder does on prompts with a known right answer: the measurements behind the
word-level decoder's goals (indirect object, agreement, induction).

- `choice_scores`: prompts whose next token should be `right` and not `wrong` ("When Mary and
  John went to the store, John gave a drink to" -> right " Mary", wrong " John"): how often
  the model's top token is the right one, how often right beats wrong, and the mean logit
  difference right minus wrong.
- `repeat_losses`: on x followed by x again, the mean next-token loss on the first copy and
  on the second (from its second token on: the first token of the repeat cannot be known).

Each takes the model (a HookedTransformer) and token ids; no text, no tokenizer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from model.run import run_with_hooks


@dataclass(frozen=True)
class ChoiceScores:
    n: int
    top_accuracy: float  # the model's most likely next token is the right one
    pair_accuracy: float  # the right token's logit beats the wrong one's
    mean_logit_diff: float  # mean of logit(right) - logit(wrong)


def last_logits(model, prompts: list[list[int]]) -> torch.Tensor:
    """[n, vocab]: the logits after each prompt's last token (prompts of one length batched)."""
    if not prompts or not all(prompts):
        raise ValueError("give at least one prompt, each of at least one token")
    out = [None] * len(prompts)
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(prompts):
        by_length[len(p)].append(i)
    for rows in by_length.values():
        ids = torch.tensor([prompts[i] for i in rows])  # [batch, pos]
        logits = run_with_hooks(model, ids)[0].logits[:, -1]  # [batch, vocab]
        for i, row in zip(rows, logits):
            out[i] = row
    return torch.stack(out)  # [n, vocab]


def choice_scores(model, prompts: list[list[int]], right: list[int],
                  wrong: list[int]) -> ChoiceScores:
    if not len(prompts) == len(right) == len(wrong):
        raise ValueError("prompts, right and wrong must have one entry each per example")
    logits = last_logits(model, prompts)  # [n, vocab]
    rows = torch.arange(len(prompts))
    diff = logits[rows, torch.tensor(right)] - logits[rows, torch.tensor(wrong)]  # [n]
    top = logits.argmax(-1) == torch.tensor(right)  # [n]
    return ChoiceScores(len(prompts), float(top.float().mean()), float((diff > 0).float().mean()),
                        float(diff.mean()))


def repeat_losses(model, ids: torch.Tensor) -> tuple[float, float]:
    """ids [batch, 2L] (x then x) -> (mean loss on the first copy, on the second copy)."""
    if ids.dim() != 2 or ids.shape[1] % 2 or ids.shape[1] < 4:
        raise ValueError(f"ids must be [batch, 2L] with L >= 2, got {tuple(ids.shape)}")
    length = ids.shape[1] // 2
    logits = run_with_hooks(model, ids)[0].logits[:, :-1]  # [batch, pos - 1, vocab]
    loss = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")  # [batch, pos-1]
    # loss[:, t] predicts token t + 1: the first copy's tokens 1..L-1, the second's L+1..2L-1
    return float(loss[:, : length - 1].mean()), float(loss[:, length:].mean())
