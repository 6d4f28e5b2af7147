"""Per-head summaries of attention: how spread out, where to, and how far each head looks.

Every statistic is first computed per query row of one head, then averaged over the rows that
count (real tokens; for "previous" and "next" only rows that have such a neighbour). Pooling
several texts averages over all their rows together, so a long text weighs more than a short
one. Rows are queries, columns are keys, each row is a softmax over keys.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.hook_names import hook_names

# Which tokens count as special, in words for the screen (the rule is model/tokenizer.py's).
SPECIAL_RULE = ("A special token counts as special wherever it stands: one typed inside the "
                "text (a `[SEP]` in the middle) reaches the model as the real one, so it "
                "counts too. `[UNK]`, which stands for a piece of text the vocabulary lacks, "
                "counts as text.")

# name -> (short label, definition shown on screen). A_ij is the attention of query i on key j,
# n the number of real tokens; every statistic is a mean over query rows i.
STATISTICS: dict[str, tuple[str, str]] = {
    "entropy": ("Entropy (bits)", "How spread out a row is: $H_i = -\\sum_j A_{ij}\\log_2 A_{ij}$. "
                "0 when a query looks at a single key; $\\log_2$ of the number of keys it may see "
                "when it looks at all of them equally."),
    "special": ("To special tokens", "Share of each row on the tokenizer's special tokens "
                "(`[CLS]`, `[SEP]`, `[MASK]`, `<s>`, `</s>`, BOS, EOS): "
                "$\\sum_{j\\,\\mathrm{special}} A_{ij}$. " + SPECIAL_RULE),
    "first": ("To the first token", "Share on position 0: $A_{i0}$. That is `[CLS]` for BERT, "
              "BOS for Llama, and simply the first word for GPT-2, which has no BOS but often "
              "parks attention there all the same."),
    "punctuation": ("To punctuation", "Share on tokens made only of punctuation (. , ; ! ? "
                    "quotes, brackets...), not counting special tokens: "
                    "$\\sum_{j\\,\\mathrm{punct}} A_{ij}$."),
    "previous": ("To the previous token", "$A_{i,i-1}$, over the rows that have a previous "
                 "token ($i \\ge 1$)."),
    "self": ("To itself", "$A_{ii}$: the query's attention to its own position."),
    "next": ("To the next token", "$A_{i,i+1}$, over the rows that have a next token "
             "($i \\le n-2$). Always 0 in a causal model, which cannot look ahead."),
    "distance": ("Mean distance (tokens)", "How far a head looks: $\\sum_j A_{ij}\\,|i-j|$, "
                 "the expected number of positions between a query and the key it attends to."),
}

_MARKERS = ("Ġ", "▁", "Ċ", "ĉ", "##")  # byte-level / sentencepiece / wordpiece decorations


def is_punctuation(token: str, unknown: str | None = None) -> bool:
    """True for a token made only of punctuation once tokenizer markers are stripped
    ("Ġ," -> ","). `unknown` is the model's own unknown-character token ("?" in our character
    models): it stands for any character the model lacks, so it is never punctuation."""
    if unknown is not None and token == unknown:
        return False
    text = token
    for marker in _MARKERS:
        text = text.replace(marker, "")
    text = text.strip()
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


@dataclass
class StatTotals:
    """Sums over query rows and row counts, per statistic: pool texts by adding these."""

    sums: dict[str, np.ndarray]  # name -> [n_layers, head], float64
    counts: dict[str, int]  # name -> number of rows that counted

    def __add__(self, other: "StatTotals") -> "StatTotals":
        if set(self.sums) != set(other.sums) or any(
                self.sums[k].shape != other.sums[k].shape for k in self.sums):
            raise ValueError("statistics from models of different shapes cannot be pooled")
        return StatTotals({k: self.sums[k] + other.sums[k] for k in self.sums},
                          {k: self.counts[k] + other.counts[k] for k in self.counts})

    def means(self) -> dict[str, np.ndarray]:
        """name -> [n_layers, head]; NaN where no row counted (e.g. "previous" on one token)."""
        return {k: self.sums[k] / self.counts[k] if self.counts[k] else np.full_like(
            self.sums[k], np.nan) for k in self.sums}


def statistic_totals(attentions, tokens: Sequence[str], special_mask,
                     attention_mask=None, unknown: str | None = None) -> StatTotals:
    """Row sums and counts of every statistic for one text.

    attentions: [n_layers, head, q_pos, k_pos] (torch or numpy); tokens: one string per position;
    special_mask, attention_mask: [pos], 1 for special tokens / real tokens. Padding (mask 0)
    is dropped first, so the real tokens are positions 0..n-1 (right padding). unknown: the
    model's unknown-character token, never counted as punctuation (see is_punctuation).
    """
    a = (attentions.float() if isinstance(attentions, torch.Tensor)
         else torch.from_numpy(np.array(attentions, dtype=np.float32)))  # [layer, head, q, k]
    if a.dim() != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attentions must be [n_layers, head, q_pos, k_pos] with q_pos == k_pos,"
                         f" got {tuple(a.shape)}")
    n_pos = a.shape[-1]
    special = torch.as_tensor(special_mask).reshape(-1).bool()  # [pos]
    real = (torch.ones(n_pos, dtype=torch.bool) if attention_mask is None
            else torch.as_tensor(attention_mask).reshape(-1).bool())  # [pos]
    if len(tokens) != n_pos or special.numel() != n_pos or real.numel() != n_pos:
        raise ValueError(f"tokens, special_mask and attention_mask need {n_pos} entries, got "
                         f"{len(tokens)}, {special.numel()} and {real.numel()}")
    n = int(real.sum())
    if n == 0 or not bool(real[:n].all()):
        raise ValueError("attention_mask must mark the real tokens first (right padding)")
    a = a[..., :n, :n]  # [n_layers, head, q, k]
    special = special[:n] & real[:n]
    punct = torch.tensor([is_punctuation(t, unknown) for t in tokens[:n]], dtype=torch.bool) & ~special  # [k]

    logs = torch.where(a > 0, a.clamp_min(1e-30).log2(), torch.zeros(()))
    entropy = -(a * logs).sum(-1)  # [n_layers, head, q]
    pos = torch.arange(n)
    distance = (pos[:, None] - pos[None, :]).abs().float()  # [q, k]
    diag = a.diagonal(dim1=-2, dim2=-1)  # [n_layers, head, n], A_ii
    rows = {
        "entropy": entropy,
        "special": a[..., special].sum(-1),  # [n_layers, head, q]
        "first": a[..., 0],
        "punctuation": a[..., punct].sum(-1),
        "previous": a.diagonal(offset=-1, dim1=-2, dim2=-1),  # [n_layers, head, n-1], A_i,i-1
        "self": diag,
        "next": a.diagonal(offset=1, dim1=-2, dim2=-1),  # [n_layers, head, n-1], A_i,i+1
        "distance": (a * distance).sum(-1),  # [n_layers, head, q]
    }
    sums = {k: v.double().sum(-1).numpy() for k, v in rows.items()}  # [n_layers, head]
    counts = {k: int(v.shape[-1]) for k, v in rows.items()}
    return StatTotals(sums, counts)


def head_statistics(attentions, tokens: Sequence[str], special_mask,
                    attention_mask=None, unknown: str | None = None) -> dict[str, np.ndarray]:
    """Every statistic of STATISTICS for one text: name -> [n_layers, head] (float64 numpy)."""
    return statistic_totals(attentions, tokens, special_mask, attention_mask, unknown).means()


def pooled_statistics(totals: Iterable[StatTotals]) -> dict[str, np.ndarray]:
    """Several texts at once: rows of every text averaged together."""
    totals = list(totals)
    if not totals:
        raise ValueError("no texts to summarise")
    pooled = totals[0]
    for more in totals[1:]:
        pooled = pooled + more
    return pooled.means()


def unknown_token(tokenizer) -> str | None:
    """The token that stands for every character a character model lacks ("?"); None for a
    tokenizer without one (a word-piece `[UNK]` stays text: see SPECIAL_RULE)."""
    unk = getattr(tokenizer, "unk_id", None)
    return None if unk is None else tokenizer.tokens([unk])[0]


def trace_totals(trace, item: int = 0, unknown: str | None = None) -> StatTotals:
    """`statistic_totals` for one text of a Trace (needs the attention patterns in its cache)."""
    names = hook_names(trace.cfg).every_layer("attn", "pattern")
    pattern = trace.cache[names[0]]
    if pattern.shape[0] <= item:
        raise ValueError(f"the trace holds {pattern.shape[0]} texts, not {item + 1}")
    attn = torch.stack([trace.cache[n][item] for n in names])
    return statistic_totals(attn, trace.batch_tokens[item], trace.special_mask[item],
                            trace.attention_mask[item], unknown)


def special_tokens_in(trace, item: int = 0) -> list[str]:
    """The distinct special tokens of one text of a Trace ("[CLS]", "[SEP]", BOS...), in the
    order they first appear; padding left out. Empty for a model that adds none (a character
    model, GPT-2) unless one was typed in the text."""
    real = trace.attention_mask[item].reshape(-1).bool()
    special = trace.special_mask[item].reshape(-1).bool() & real  # [pos]
    found: list[str] = []
    for token, is_special in zip(trace.batch_tokens[item], special.tolist()):
        if is_special and token not in found:
            found.append(token)
    return found
