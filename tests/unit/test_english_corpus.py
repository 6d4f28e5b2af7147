"""The word-level decoder's corpus (training/english_corpus.py) and its word tokenizer: the
same seed gives the same text, every word is in the vocabulary, and the held-out split keeps
its names, objects, nouns and templates out of the tested roles of the training text."""

from __future__ import annotations

import random
import re

import pytest

from model.tokenizer import WordTokenizer, split_words
from training import english_corpus as corpus
from training import english_task as et
from training import english_world as world


@pytest.fixture(scope="module")
def tokenizer():
    return WordTokenizer(corpus.vocabulary())


def _training_tokens(seed: int, n: int = 4000) -> list[str]:
    rng = random.Random(seed)
    plain = [" " + w for w in world.ADJECTIVES]
    return corpus.training_text(rng, n, plain)


def test_same_seed_same_text_other_seed_other_text():
    assert _training_tokens(1) == _training_tokens(1)
    assert _training_tokens(1)[:200] != _training_tokens(2)[:200]


def test_every_token_of_the_text_and_the_held_out_prompts_is_in_the_vocabulary(tokenizer):
    rng = random.Random(3)
    held = [corpus.io_example(rng, True) for _ in range(300)]
    held += [corpus.agreement_example(rng, True) for _ in range(300)]
    tokens = _training_tokens(5, 20_000)
    for ex in held:
        tokens += split_words(ex.prompt) + [ex.right, ex.wrong]
    missing = {t for t in tokens if t not in tokenizer.index}
    assert not missing


def test_splits_are_disjoint_in_the_tested_roles():
    train, held = world.split(False), world.split(True)
    assert set(train.names).isdisjoint(held.names) and len(held.names) >= 8
    assert set(train.objects).isdisjoint(held.objects) and len(held.objects) >= 5
    assert set(train.nouns).isdisjoint(held.nouns) and len(held.nouns) >= 5
    assert set(corpus.IO_TEMPLATES).isdisjoint(corpus.HELD_OUT_IO_TEMPLATES)
    assert set(corpus.AGREEMENT_TEMPLATES).isdisjoint(corpus.HELD_OUT_AGREEMENT_TEMPLATES)


def test_held_out_names_never_give_or_receive_in_the_training_text():
    text = "".join(_training_tokens(7, 60_000))
    held = "|".join(world.HELD_OUT_NAMES)
    gifts = re.findall(r"(\w+) (?:gave|handed|passed|threw|brought) (?:a|the) (\w+) to (\w+)",
                       text)
    assert len(gifts) > 100
    assert not [g for g in gifts if g[0] in world.HELD_OUT_NAMES or g[2] in world.HELD_OUT_NAMES]
    assert not [g for g in gifts if g[1] in world.HELD_OUT_OBJECTS]
    assert re.search(rf"\b({held})\b", text)  # they are words the model reads, in stories


def test_indirect_object_answer_is_the_name_said_once():
    rng = random.Random(11)
    for held_out in (False, True):
        for _ in range(50):
            ex = corpus.io_example(rng, held_out)
            words = split_words(ex.prompt)
            assert words.count(ex.wrong) + words.count(ex.wrong.strip()) == 2
            assert words.count(ex.right) + words.count(ex.right.strip()) == 1
            assert ex.prompt.endswith(" to")


def test_agreement_verb_agrees_with_the_first_noun_not_the_attractor():
    rng = random.Random(12)
    plural = {p for _, p in world.NOUNS}
    for _ in range(100):
        ex = corpus.agreement_example(rng, held_out=True, attractor=True, verbs=("is", "are"))
        words = [w.strip() for w in split_words(ex.prompt)]
        nouns = [w for w in words if w in plural or w in {s for s, _ in world.NOUNS}]
        first_is_plural = nouns[0] in plural
        assert ex.right == (" are" if first_is_plural else " is")
        assert (nouns[-1] in plural) != first_is_plural  # the attractor has the other number
        assert nouns[0] in {w for pair in world.NOUNS if pair[0] in world.HELD_OUT_NOUNS
                            for w in pair}


def test_repeated_words_repeat():
    rng = random.Random(13)
    words = [" " + w for w in world.PLACES]
    for _ in range(20):
        tokens = split_words(corpus.repeated_words(rng, words))
        half = len(tokens) // 2
        assert [t.strip() for t in tokens[:half]] == [t.strip() for t in tokens[half:]]
        assert corpus.INDUCTION_LENGTHS[0] <= half <= corpus.INDUCTION_LENGTHS[1]
    # the held-out lists are no longer than the longest seen in training
    assert corpus.INDUCTION_LENGTHS[1] >= et.INDUCTION_LENGTH


def test_word_tokenizer_round_trips_and_reads_unknown_words(tokenizer):
    text = "When Mary and John went to the store, John gave a drink to Mary."
    enc = tokenizer.encode([text], None, 64)
    assert "".join(enc.tokens[0]) == text
    assert tokenizer.decode(enc.input_ids[0].tolist()) == text
    assert enc.tokens[0][-2:] == [" Mary", "."]
    lower = tokenizer.encode(["the keys"], None, 8).tokens[0]
    assert lower == ["The", " keys"]  # a first letter typed in the other case still reads
    unknown = tokenizer.encode(["Mary saw a zebra"], None, 8)
    assert unknown.input_ids[0, -1] == tokenizer.unk_id and not unknown.special_mask.any()
    assert tokenizer.encode([text], None, 5).n_dropped == [len(split_words(text)) - 5]


def test_word_tokenizer_refuses_a_bad_vocabulary():
    with pytest.raises(ValueError, match="once"):
        WordTokenizer(["<unk>", " a", " a"])
    with pytest.raises(ValueError, match="unk"):
        WordTokenizer([" a", " b"])
    with pytest.raises(ValueError, match="d_vocab"):
        WordTokenizer.from_data({"words": ["<unk>", " a"]}, d_vocab=3)


def test_word_tokenizer_names_the_words_it_does_not_know(tokenizer):
    assert tokenizer.unknown_words("Mary saw a zebra, a zebra and a giraffe.") == ["zebra",
                                                                                  "giraffe"]
    assert tokenizer.unknown_words("the keys to the old cabinet") == []
