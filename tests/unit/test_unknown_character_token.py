"""Our own character models read only their own alphabet: their unknown-character token "?"
is not punctuation in the head statistics, and the sentence offered for tiny-induction is one
it reads fully (every character is in its vocabulary)."""

from __future__ import annotations

import torch

from analysis.head_stats import head_statistics, is_punctuation, unknown_token
from model.registry import BUNDLED
from model.tokenizer import CharTokenizer
from ui.examples import known_sentence


def _tokenizer(name: str) -> CharTokenizer:
    return CharTokenizer.from_file(BUNDLED[name]() / "tokenizer.json")


def test_the_unknown_token_is_not_punctuation():
    tokenizer = _tokenizer("tiny-induction")
    unknown = unknown_token(tokenizer)
    assert unknown == "?"
    assert is_punctuation("?") is True  # a real question mark, in a model that knows it
    assert is_punctuation("?", unknown) is False
    assert is_punctuation(".", unknown) is True


def test_head_statistics_put_no_punctuation_share_on_the_unknown_token():
    tokens = ["a", "?", "b"]
    attn = torch.zeros(1, 1, 3, 3)
    attn[..., 1] = 1.0  # every row looks only at the "?"
    special = torch.zeros(3)
    assert head_statistics(attn, tokens, special)["punctuation"][0, 0] == 1.0
    assert head_statistics(attn, tokens, special, unknown="?")["punctuation"][0, 0] == 0.0


def test_tiny_inductions_sentence_is_read_fully_and_repeats():
    sentence = known_sentence("tiny-induction")
    tokenizer = _tokenizer("tiny-induction")
    assert sentence
    unknown = tokenizer.chars[tokenizer.unk_id]
    assert all(c in tokenizer.index and c != unknown for c in sentence), sentence
    half = len(sentence) // 2
    assert sentence[:half] == sentence[half:]  # the kind of text it learned: a repeat


def test_a_word_piece_tokenizer_has_no_unknown_character():
    class Words:
        def tokens(self, ids):
            return ["[UNK]" for _ in ids]

    assert unknown_token(Words()) is None
