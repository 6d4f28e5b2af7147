"""Text -> token ids, through the checkpoint's own fast tokenizer (or our character tokenizer).

Every tokenizer here returns an `Encoding` with right padding, the attention mask, token types,
which positions are special tokens, and how many tokens truncation dropped from each text.

Which tokens are special: a token is special by its id, wherever it came from. A `[SEP]` typed
inside the text reaches the model as the real [SEP] id (Hugging Face's tokenizers split typed
special tokens out of the text too), so it is special exactly like the [SEP] the tokenizer adds
(`get_special_tokens_mask(ids, already_has_special_tokens=True)` in transformers marks it the
same way). The one exception is the unknown token ([UNK], <unk>): it stands for a piece of the
text the vocabulary lacks (an emoji, say), so it counts as text. Padding is always special.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

# At import time, not inside a function: `transformers` resolves its names lazily and that
# resolution is not thread-safe. Two users loading models at once on a fresh server would
# otherwise get "cannot import name 'AutoTokenizer'" in one of the threads.
from transformers import AutoTokenizer


@dataclass
class Encoding:
    input_ids: torch.Tensor  # [batch, pos]
    attention_mask: torch.Tensor  # [batch, pos], 1 for real tokens, 0 for padding
    token_type_ids: torch.Tensor  # [batch, pos], 0 for sentence A, 1 for sentence B
    special_mask: torch.Tensor  # [batch, pos], 1 for [CLS], [SEP], BOS, padding...
    tokens: list[list[str]]  # the tokenizer's own token strings, padding included
    n_dropped: list[int]  # tokens cut from each text to fit the model's context
    # positions of special tokens that were typed in the text rather than added around it
    typed_special: list[list[int]] = field(default_factory=list)  # [batch][k]


def special_by_id(ids: torch.Tensor, special_ids, attention_mask: torch.Tensor) -> torch.Tensor:
    """1 where the id is one of `special_ids` or the position is padding: [batch, pos]."""
    listed = torch.tensor(sorted(special_ids), dtype=ids.dtype)
    return (torch.isin(ids, listed) | (attention_mask == 0)).long()


def typed_positions(special: torch.Tensor, added: torch.Tensor,
                    attention_mask: torch.Tensor) -> list[list[int]]:
    """Real positions that are special by id but were not added by the tokenizer."""
    typed = special.bool() & ~added.bool() & attention_mask.bool()  # [batch, pos]
    return [row.nonzero().flatten().tolist() for row in typed]


# A directory needs one of these; without them transformers 5 quietly builds a tokenizer
# that knows only the special tokens and turns every word into [UNK].
VOCAB_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model")


class HFTokenizer:
    """Wraps a `transformers` fast tokenizer loaded from a model directory."""

    def __init__(self, path: Path) -> None:
        if not any((Path(path) / name).is_file() for name in VOCAB_FILES):
            raise ValueError(f"no tokenizer files: expected one of {', '.join(VOCAB_FILES)}")
        self._tok = AutoTokenizer.from_pretrained(str(path), use_fast=True, trust_remote_code=False)
        if not self._tok.is_fast:
            raise ValueError("only fast (tokenizer.json) tokenizers are supported")
        if len(self._tok) <= len(self._tok.all_special_tokens):
            raise ValueError("the tokenizer's vocabulary holds only special tokens")
        if self._tok.pad_token is None:  # GPT-2 and Llama ship without one; padding is masked
            self._tok.pad_token = self._tok.eos_token or self._tok.unk_token
        self._tok.padding_side = "right"
        self._tok.model_max_length = 10**9  # we truncate to the model's own context ourselves
        self.vocab_size = len(self._tok)
        # Special by id (the module's docstring): every special and added-special token but
        # the unknown one. transformers' all_special_ids lists the named ones; added tokens
        # flagged special (Llama 3's reserved tokens) are in added_tokens_decoder.
        added = getattr(self._tok, "added_tokens_decoder", {}) or {}
        self.special_ids = (set(self._tok.all_special_ids)
                            | {i for i, t in added.items() if getattr(t, "special", False)})
        self.special_ids.discard(self._tok.unk_token_id)
        # Each call sets truncation and padding on the one shared Rust tokenizer: without the
        # lock, users running at once get each other's settings (wrong n_dropped, errors).
        self._lock = threading.Lock()

    def encode(self, texts: list[str], pairs: list[str] | None, max_len: int) -> Encoding:
        args = (texts, pairs) if pairs is not None else (texts,)
        kw = dict(add_special_tokens=True, padding=True, return_special_tokens_mask=True,
                  return_token_type_ids=True, return_tensors="pt")
        with self._lock:
            enc = self._tok(*args, **kw)  # untruncated first: usually everything fits
            full = enc["attention_mask"].sum(dim=1).tolist()
            if max(full) > max_len:
                enc = self._tok(*args, truncation=True, max_length=max_len, **kw)
            tokens = [enc.tokens(i) for i in range(enc["input_ids"].shape[0])]
        ids, mask = enc["input_ids"], enc["attention_mask"]  # [batch, pos]
        added = enc["special_tokens_mask"]  # [batch, pos], only what the template added
        special = special_by_id(ids, self.special_ids, mask) | added
        kept = mask.sum(dim=1).tolist()
        return Encoding(
            input_ids=ids,
            attention_mask=mask,
            token_type_ids=enc["token_type_ids"],
            special_mask=special,
            tokens=tokens,
            n_dropped=[f - k for f, k in zip(full, kept)],
            typed_special=typed_positions(special, added, mask),
        )

    def tokens(self, ids: list[int]) -> list[str]:
        return self._tok.convert_ids_to_tokens(ids)

    def decode(self, ids: list[int], skip_special: bool = False) -> str:
        return self._tok.decode(ids, skip_special_tokens=skip_special)


# A character tokenizer's file holds one string of at most d_vocab characters: a few kilobytes.
MAX_CHAR_TOKENIZER_BYTES = 1 << 24


class CharTokenizer:
    """One token per character; for the small models this project trains itself."""

    def __init__(self, chars: str, unk: str = "?") -> None:
        if not isinstance(chars, str) or not chars:
            raise ValueError(f"'chars' must be a non-empty string of characters, got {chars!r:.40}")
        repeated = sorted(c for c, n in Counter(chars).items() if n > 1)
        if repeated:
            raise ValueError(f"'chars' must list each character once; repeated: {repeated[:5]}")
        if not isinstance(unk, str) or len(unk) != 1:
            raise ValueError(f"'unk' must be a single character, got {unk!r:.40}")
        if unk not in chars:
            chars = chars + unk
        self.chars = chars
        self.index = {c: i for i, c in enumerate(chars)}
        self.unk_id = self.index[unk]
        self.vocab_size = len(chars)
        self.special_ids: set[int] = set()  # every character is text

    @classmethod
    def from_file(cls, path: Path, d_vocab: int | None = None) -> "CharTokenizer":
        """Read {"chars": "...", "unk": "?"}; ValueError (or OSError) says what is wrong.
        With d_vocab, the tokenizer must have exactly the model's vocabulary size."""
        if path.stat().st_size > MAX_CHAR_TOKENIZER_BYTES:
            raise ValueError(f"the file is larger than {MAX_CHAR_TOKENIZER_BYTES:,} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "chars" not in data:
            raise ValueError('expected a JSON object like {"chars": "abc?", "unk": "?"}')
        tokenizer = cls(data["chars"], data.get("unk", "?"))  # checks both types
        if "unk" in data and data["unk"] not in data["chars"]:
            raise ValueError(f"'unk' must be one of the characters in 'chars', "
                             f"got {data['unk']!r:.40}")
        if d_vocab is not None and tokenizer.vocab_size != d_vocab:
            raise ValueError(f"'chars' gives {tokenizer.vocab_size} tokens (with the unknown "
                             f"character) but the model's vocabulary (d_vocab) is {d_vocab}")
        return tokenizer

    kind = "character"  # for messages: "a character model"

    def rows(self, texts: list[str]) -> list[list[int]]:
        return [[self.index.get(c, self.unk_id) for c in t] for t in texts]

    def encode(self, texts: list[str], pairs: list[str] | None, max_len: int) -> Encoding:
        if pairs is not None:
            raise ValueError(f"a {self.kind} model reads one text at a time, not sentence pairs")
        rows = self.rows(texts)
        width = min(max_len, max(len(r) for r in rows))
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, row in enumerate(rows):
            kept = row[:width]
            ids[i, : len(kept)] = torch.tensor(kept, dtype=torch.long)
            mask[i, : len(kept)] = 1
        return Encoding(
            input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids),
            special_mask=1 - mask, tokens=[self.tokens(r) for r in ids.tolist()],
            n_dropped=[max(0, len(r) - width) for r in rows], typed_special=[[] for _ in rows],
        )

    def tokens(self, ids: list[int]) -> list[str]:
        return [self.chars[i] for i in ids]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.tokens(ids))


class ReversalTokenizer(CharTokenizer):
    """One token per character, lower-cased (the model knows a-z), EOS after each text."""

    def __init__(self, chars: str, pad: str, bos: str, eos: str, unk: str = "?") -> None:
        super().__init__(chars, unk)
        for name, c in (("pad", pad), ("bos", bos), ("eos", eos)):
            if not (isinstance(c, str) and len(c) == 1 and c in self.index):
                raise ValueError(f"the {name} token must be one of the characters in 'chars', "
                                 f"got {c!r:.40}")
        self.pad_id, self.bos_id, self.eos_id = (self.index[c] for c in (pad, bos, eos))
        self.special_ids = {self.pad_id, self.bos_id, self.eos_id}  # also when typed

    def encode(self, texts: list[str], pairs: list[str] | None, max_len: int) -> Encoding:
        if pairs is not None:
            raise ValueError("the encoder-decoder reads one text at a time, not sentence pairs")
        full = [[self.index.get(c, self.unk_id) for c in t.lower()] for t in texts]
        rows = [r[: max_len - 1] + [self.eos_id] for r in full]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)  # [batch, pos]
        mask = torch.zeros_like(ids)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        special = special_by_id(ids, self.special_ids, mask)  # [batch, pos]
        added = torch.zeros_like(ids)  # [batch, pos]: the EOS appended to each text
        for i, row in enumerate(rows):
            added[i, len(row) - 1] = 1
        return Encoding(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids),
                        special_mask=special, tokens=[self.tokens(r) for r in ids.tolist()],
                        n_dropped=[max(0, len(r) - (max_len - 1)) for r in full],
                        typed_special=typed_positions(special, added, mask))


# ------------------------------------------------------------------------------- words
# A word with the space before it (" Mary"), or one punctuation mark: GPT-2's convention, so
# the tokens joined give back the text and a continuation starts with its own space.
WORD_PATTERN = re.compile(r" ?[A-Za-z0-9]+| ?[^A-Za-z0-9\s]")


def split_words(text: str) -> list[str]:
    """Text -> word tokens: a run of white space counts as one space."""
    lead = " " if text[:1].isspace() else ""
    return WORD_PATTERN.findall(lead + " ".join(text.split()))


class WordTokenizer(CharTokenizer):
    """One token per word or punctuation mark, from a fixed vocabulary; for the word-level
    decoder this project trains itself. A word it lacks reads as the unknown token."""

    def __init__(self, words: list[str], unk: str = "<unk>") -> None:
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w
                                                               for w in words):
            raise ValueError("'words' must be a non-empty list of non-empty strings")
        repeated = sorted(w for w, n in Counter(words).items() if n > 1)
        if repeated:
            raise ValueError(f"'words' must list each word once; repeated: {repeated[:5]}")
        if unk not in words:
            raise ValueError(f"'unk' must be one of the words, got {unk!r:.40}")
        self.words = words
        self.index = {w: i for i, w in enumerate(words)}
        self.unk_id = self.index[unk]
        self.vocab_size = len(words)
        self.special_ids = set()

    @classmethod
    def from_data(cls, data: dict, d_vocab: int | None = None) -> "WordTokenizer":
        tokenizer = cls(data["words"], data.get("unk", "<unk>"))
        if d_vocab is not None and tokenizer.vocab_size != d_vocab:
            raise ValueError(f"'words' has {tokenizer.vocab_size} tokens but the model's "
                             f"vocabulary (d_vocab) is {d_vocab}")
        return tokenizer

    kind = "word"

    def rows(self, texts: list[str]) -> list[list[int]]:
        return [[self._id(w) for w in split_words(t)] or [self.unk_id] for t in texts]

    def _id(self, word: str) -> int:
        """The word's id; else the same word with the other case of its first letter (a
        sentence typed in lower case), else the unknown token."""
        if word in self.index:
            return self.index[word]
        space, bare = (" ", word[1:]) if word.startswith(" ") else ("", word)
        return self.index.get(space + bare[:1].swapcase() + bare[1:], self.unk_id)

    def unknown_words(self, text: str) -> list[str]:
        """The words of `text` this tokenizer reads as the unknown token, each once."""
        return list(dict.fromkeys(w.strip() for w in split_words(text)
                                  if self._id(w) == self.unk_id))

    def tokens(self, ids: list[int]) -> list[str]:
        return [self.words[i] for i in ids]


def own_tokenizer(path: Path, d_vocab: int | None = None) -> CharTokenizer:
    """The tokenizer.json of a model this project trained: {"words": [...], "unk": "<unk>"}
    for a word model, else the character format (CharTokenizer.from_file)."""
    if path.stat().st_size > MAX_CHAR_TOKENIZER_BYTES:
        raise ValueError(f"the file is larger than {MAX_CHAR_TOKENIZER_BYTES:,} bytes")
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "words" in data:
        return WordTokenizer.from_data(data, d_vocab)
    return CharTokenizer.from_file(path, d_vocab)
