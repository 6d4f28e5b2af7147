"""Training data for the models this project trains itself, all made here, none downloaded.

- `repeated_sequences`: random characters in which a random stretch is repeated, the task on
  which induction heads form (predict the repeat by finding where the current token came
  before and copying the token that followed it).
- `corpus`: a character corpus written for this project: a few paragraphs of ours about
  attention, plus sentences from a small grammar of ours. Held-out text: the same grammar
  with a different seed, plus a paragraph never shown in training.
- `reversal_pairs`: short random words and their reversals, for the encoder-decoder.
- the word-level English decoder's sentences and task: english_corpus.py, english_task.py.

Every function takes a `torch.Generator`, so the same seed gives the same data.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from analysis.induction import repeat_scores
from analysis.cross_attention import cross_patterns, reversal_scores
from model.seq2seq import EncoderDecoder

from .english_task import EnglishTask
from .task_base import Task, _own_config, init_attention, next_token_loss  # noqa: F401

# ----------------------------------------------------------------------------- induction
INDUCTION_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"  # the tokens repeats are drawn from


def repeated_sequences(gen: torch.Generator, batch: int, n_ctx: int, n_symbols: int,
                       min_len: int = 8, max_len: int = 24) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token ids [batch, n_ctx] in which a stretch of random length L (min_len..max_len)
    starting at a random place p is repeated right after itself: ids[p+L+j] = ids[p+j].

    Also returns `second` [batch, n_ctx], True on the repeat (the predictable tokens).
    Varying L and p keeps position from giving the answer away: only "find the earlier copy of
    this token and read what followed it" predicts the repeat.
    """
    if not 1 <= min_len <= max_len or 2 * max_len > n_ctx:
        raise ValueError(f"need 1 <= min_len <= max_len and 2 * max_len <= n_ctx ({n_ctx})")
    noise = torch.randint(0, n_symbols, (batch, n_ctx), generator=gen)  # [batch, pos]
    length = torch.randint(min_len, max_len + 1, (batch, 1), generator=gen)  # [batch, 1]
    start = (torch.rand(batch, 1, generator=gen) * (n_ctx - 2 * length + 1)).long()  # [batch, 1]
    pos = torch.arange(n_ctx)[None]  # [1, pos]
    second = (pos >= start + length) & (pos < start + 2 * length)  # [batch, pos]
    source = torch.where(second, pos - length, pos)  # [batch, pos]
    return noise.gather(1, source), second  # [batch, pos] twice


# -------------------------------------------------------------------------------- corpus
OUR_PARAGRAPHS = [
    "A transformer reads text as a row of tokens. This small model reads one character at a "
    "time, so every letter, space and full stop is a token of its own.",
    "Each token becomes a vector. A second vector says where the token stands, and the two are "
    "added before the first layer sees them.",
    "In every head, each token sends out a query and offers a key. The query of one token is "
    "compared with the keys of the tokens before it, and the softmax turns those scores into "
    "weights that add up to one.",
    "The heatmap shows those weights. Rows are the tokens that look, columns are the tokens "
    "they look at, and a bright cell means that the head pays attention there.",
    "A decoder may not look ahead. The mask hides every key that comes after the query, so the "
    "upper right half of each heatmap is empty.",
    "After training, some heads look at the previous character, some look at the last space, "
    "and some spread their attention over the whole word.",
    "The loss measures how surprised the model is by the next character. It starts high, "
    "falls quickly while the model learns which letters are common, and then falls slowly "
    "while it learns words.",
    "We wrote this text for the model ourselves, and a small grammar of ours writes more of it, "
    "so that everything it learns comes from this project.",
]
HELD_OUT_PARAGRAPH = (  # never trained on: part of the held-out text
    "When the model has learned enough, the heads that looked everywhere begin to look at one "
    "place, and the text it writes begins to look like the text it read."
)

SUBJECTS = ["the query", "the key", "each head", "the model", "a token", "the softmax",
            "the mask", "the first layer", "the second layer", "every row", "the decoder",
            "the encoder", "a small transformer", "the learner", "this head", "the value"]
VERBS = [("looks at", "look at"), ("attends to", "attend to"), ("copies", "copy"),
         ("reads", "read"), ("finds", "find"), ("ignores", "ignore"), ("mixes", "mix"),
         ("compares", "compare"), ("follows", "follow"), ("remembers", "remember")]
OBJECTS = ["the previous token", "every key", "the next character", "the start of the text",
           "its own position", "the last word", "a pattern", "the values", "the earlier copy",
           "the scores", "the space", "the first letter", "the whole sentence", "the weights"]
ENDINGS = ["", "", "", " again", " at every step", " in each layer", " after training",
           " before the softmax", " for a while", " very quickly"]
LINKS = ["when", "because", "while", "so", "and then"]


def _sentence(rng: random.Random) -> str:
    """One sentence of the grammar, e.g. "Each head copies the earlier copy again."."""
    s, (v, v_base), o, e = (rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS),
                            rng.choice(ENDINGS))
    form = rng.randrange(6)
    if form == 0:
        text = f"does {s} {v_base} {o}{e}?"
    elif form == 1:
        text = f"{s} does not {v_base} {o}{e}."
    elif form == 2:
        s2, (v2, _), o2 = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
        text = f"{s} {v} {o}, {rng.choice(LINKS)} {s2} {v2} {o2}."
    else:
        text = f"{s} {v} {o}{e}."
    return text[0].upper() + text[1:]


def grammar_text(seed: int, n_chars: int) -> str:
    """At least n_chars of grammar sentences, a few sentences to a line."""
    rng = random.Random(seed)
    lines, size = [], 0
    while size < n_chars:
        line = " ".join(_sentence(rng) for _ in range(rng.randint(2, 4)))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


def corpus(seed: int = 0, n_chars: int = 60_000) -> tuple[str, str]:
    """(training text, held-out text). Training: our paragraphs (twice) between grammar text;
    held-out: grammar text from another seed and a paragraph the model never sees."""
    paragraphs = "\n".join(OUR_PARAGRAPHS) + "\n"
    train = paragraphs + grammar_text(seed, n_chars) + paragraphs
    held_out = grammar_text(seed + 10_000, 4_000) + HELD_OUT_PARAGRAPH + "\n"
    return train, held_out


def corpus_chars(*texts: str, limit: int = 96) -> str:
    """The characters of the texts, most frequent first, at most `limit` of them (a rare
    character beyond the limit reads as the unknown token "?")."""
    counts: dict[str, int] = {}
    for text in texts:
        for c in text:
            counts[c] = counts.get(c, 0) + 1
    ordered = sorted(counts, key=lambda c: (-counts[c], c))[:limit]
    return "".join(sorted(ordered))


def text_windows(ids: torch.Tensor, gen: torch.Generator, batch: int, width: int) -> torch.Tensor:
    """[batch, width] random windows of a 1-D id tensor (the text must be longer than width)."""
    if ids.numel() <= width:
        raise ValueError(f"the text has {ids.numel()} characters; it needs more than {width}")
    starts = torch.randint(0, ids.numel() - width + 1, (batch, 1), generator=gen)  # [batch, 1]
    return ids[starts + torch.arange(width)[None]]  # [batch, width]


# ------------------------------------------------------------------------------ reversal
REVERSAL_LETTERS = "abcdefghijklmnopqrstuvwxyz"
PAD, BOS, EOS = "_", "^", "$"  # one character each, so the char tokenizer can show them


def reversal_pairs(gen: torch.Generator, batch: int, min_len: int, max_len: int,
                   letter_ids: torch.Tensor, pad: int, bos: int, eos: int) -> dict:
    """Random words of min_len..max_len letters and their reversals, as id tensors:

    src      [batch, max_len + 1]  the word, then EOS, then padding
    src_mask [batch, max_len + 1]  1 on the word and EOS
    dec_in   [batch, max_len + 1]  BOS, then the reversed word, then padding
    target   [batch, max_len + 1]  the reversed word, then EOS, then -100 (ignored)
    source_pos [batch, max_len + 1] for each decoder row, the source position it must copy
                                   (n - 1 - t), or -1 for the EOS row and padding
    """
    width = max_len + 1
    n = torch.randint(min_len, max_len + 1, (batch, 1), generator=gen)  # [batch, 1]
    pos = torch.arange(width)[None]  # [1, pos]
    letters = letter_ids[torch.randint(0, letter_ids.numel(), (batch, width), generator=gen)]
    src = torch.where(pos < n, letters, torch.full_like(letters, pad))  # [batch, pos]
    src = torch.where(pos == n, torch.full_like(src, eos), src)
    src_mask = (pos <= n).long()  # [batch, pos]
    source_pos = torch.where(pos < n, n - 1 - pos, torch.full_like(pos, -1))  # [batch, pos]
    reversed_ = letters.gather(1, source_pos.clamp(min=0))  # [batch, pos]
    target = torch.where(pos < n, reversed_, torch.full_like(reversed_, -100))
    target = torch.where(pos == n, torch.full_like(target, eos), target)  # [batch, pos]
    dec_in = torch.cat([torch.full((batch, 1), bos), reversed_[:, :-1]], dim=1)  # [batch, pos]
    dec_in = torch.where(pos <= n, dec_in, torch.full_like(dec_in, pad))
    return dict(src=src, src_mask=src_mask, dec_in=dec_in, target=target, source_pos=source_pos)


# --------------------------------------------------------------------------------- tasks
# The base class and its helpers: task_base.py.
class InductionTask(Task):
    key, title = "induction", "Induction heads (repeated random characters)"
    chars = INDUCTION_CHARS + "?"
    n_ctx = 48
    probe_text = "k3bq9xw7mf2t" * 2  # 12 distinct characters, then the same 12 again

    def config(self, n_layers, n_heads, d_model):
        return _own_config(d_model=d_model, n_heads=n_heads, n_layers=n_layers, n_ctx=self.n_ctx,
                           d_vocab=len(self.chars), d_mlp=0, attn_only=True, positions="learned",
                           attn_bias=False)

    def batch(self, gen, batch_size):
        ids, second = repeated_sequences(gen, batch_size, self.n_ctx, len(INDUCTION_CHARS))
        return {"ids": ids, "second": second}

    def loss(self, model, batch):
        """Next-token loss on the repeat only: the other tokens are random, so no model can
        predict them, and their loss would only add noise to the gradient."""
        target = batch["ids"][:, 1:].masked_fill(~batch["second"][:, 1:], -100)  # [batch, pos-1]
        logits = model(batch["ids"]).logits[:, :-1]  # [batch, pos - 1, vocab]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    def probe(self):
        return list(self.probe_text), list(self.probe_text)

    def evaluate(self, model):
        scores = repeat_scores(model, n_seqs=32, n_symbols=len(INDUCTION_CHARS))
        last = scores["induction"][-1]  # [head], the layer where induction heads live
        return {"induction score": float(last.max()),
                "previous-token score": float(scores["previous"][0].max())}


def split_text(text: str, held_out: float = 0.15, min_held: int = 100) -> tuple[str, str]:
    """A user's own text -> (training part, held-out tail)."""
    cut = len(text) - max(min_held, int(len(text) * held_out))
    return text[:cut], text[cut:]


class CharsTask(Task):
    key, title = "chars", "Character language model (our own text)"
    n_ctx = 64
    min_chars = 400  # for a user's own text

    def __init__(self, text: str | None = None) -> None:
        if text is None:
            train, held = corpus()
        else:
            if len(text) < self.min_chars:
                raise ValueError(f"give at least {self.min_chars} characters of text "
                                 f"(this one has {len(text)})")
            self.title = "Character language model (your own text)"
            train, held = split_text(text)
        chars = corpus_chars(train, held)
        self.chars = chars if "?" in chars else chars + "?"
        self.train_ids, self.held_ids = self.ids(train), self.ids(held)
        self.unigram = unigram_loss(self.train_ids, self.held_ids, len(self.chars))
        first = held.split("\n")[0]
        probe = (first if len(first) >= 24 else held)[:40]
        self.probe_text = "".join(c if c in self.chars else "?" for c in probe)

    def ids(self, text: str) -> torch.Tensor:
        index = {c: i for i, c in enumerate(self.chars)}
        return torch.tensor([index.get(c, index["?"]) for c in text], dtype=torch.long)

    def config(self, n_layers, n_heads, d_model):
        return _own_config(d_model=d_model, n_heads=n_heads, n_layers=n_layers, n_ctx=self.n_ctx,
                           d_vocab=len(self.chars), d_mlp=4 * d_model, positions="sinusoidal")

    def batch(self, gen, batch_size):
        return {"ids": text_windows(self.train_ids, gen, batch_size, self.n_ctx)}

    def probe(self):
        return list(self.probe_text), list(self.probe_text)

    def held_out_loss(self, model, max_windows: int = 48) -> float:
        """Mean next-character loss (nats) over non-overlapping held-out windows."""
        step = self.n_ctx - 1  # each window predicts n_ctx - 1 characters, each counted once
        n = min(max_windows, (self.held_ids.numel() - 1) // step)
        windows = self.held_ids[: n * step + 1].unfold(0, self.n_ctx, step)  # [batch, pos]
        with torch.no_grad():
            return float(next_token_loss(model, windows))

    def evaluate(self, model):
        return {"held-out loss": self.held_out_loss(model), "unigram baseline": self.unigram}


def unigram_loss(train_ids: torch.Tensor, held_ids: torch.Tensor, vocab: int) -> float:
    """Held-out loss (nats per character) of predicting every character from the training
    text's character frequencies alone (add-one smoothing): the bar a model must clear."""
    counts = torch.bincount(train_ids, minlength=vocab).double() + 1  # [vocab]
    log_p = (counts / counts.sum()).log()  # [vocab]
    return float(-log_p[held_ids].mean())


class ReverseTask(Task):
    key, title = "reverse", "Reversal (encoder-decoder with cross-attention)"
    encoder_decoder = True
    chars = PAD + BOS + EOS + REVERSAL_LETTERS + "?"
    special = {"pad": PAD, "bos": BOS, "eos": EOS}
    pad_id, bos_id, eos_id = 0, 1, 2  # their places in `chars`
    min_len, max_len = 3, 10
    probe_word = "softmax"  # seven different letters: one bright cell per row

    def config(self, n_layers, n_heads, d_model):
        shared = dict(d_model=d_model, n_heads=n_heads, n_layers=n_layers, n_ctx=self.max_len + 1,
                      d_vocab=len(self.chars), d_mlp=4 * d_model, positions="learned")
        return (_own_config(causal=False, has_lm_head=False, **shared), _own_config(**shared))

    def build(self, cfg):
        return init_attention(EncoderDecoder(*cfg))

    def batch(self, gen, batch_size):
        letters = torch.arange(3, 3 + len(REVERSAL_LETTERS))
        return reversal_pairs(gen, batch_size, self.min_len, self.max_len, letters,
                              self.pad_id, self.bos_id, self.eos_id)

    def loss(self, model, batch):
        logits = model(batch["src"], batch["src_mask"],
                       decoder_input_ids=batch["dec_in"]).decoder_logits  # [batch, out, vocab]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["target"].reshape(-1))

    def n_tokens(self, batch):
        return int(batch["src_mask"].sum() * 2)  # source tokens, and as many decoder tokens

    def probe(self):
        return [BOS] + list(self.probe_word[::-1]), list(self.probe_word) + [EOS]

    def snapshot(self, model):
        """[layer, head, out_pos, src_pos]: the cross-attention on the probe word."""
        dec, src = ([[self.chars.index(c) for c in side]] for side in self.probe())
        cache = cross_patterns(model, torch.tensor(src), torch.ones(1, len(src[0])).long(),
                               torch.tensor(dec))
        return cache[:, 0].half().numpy()

    def evaluate(self, model):
        batch = self.batch(torch.Generator().manual_seed(4321), 64)  # fresh words, fixed
        align, accuracy = reversal_scores(model, batch, self.bos_id, self.eos_id)
        return {"cross-attention on the right letter": float(align[-1].mean()),
                "words reversed exactly": accuracy}


TASKS = {"induction": InductionTask, "chars": CharsTask, "reverse": ReverseTask,
         "english": EnglishTask}  # english_task.py: the word-level decoder


def make_task(key: str, text: str | None = None) -> Task:
    if key not in TASKS:
        raise ValueError(f"unknown task {key!r}: choose one of {sorted(TASKS)}")
    return TASKS[key](text) if text is not None else TASKS[key]()
