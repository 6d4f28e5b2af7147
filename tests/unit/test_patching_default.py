"""A decoder's default corrupted prompt: the candidates keep the text's length in tokens, the
gap of each is the one `prepare` measures, and the pick is the first clearly moving one (else
the largest), so tiny-chars' default pair is not lost in noise."""

from __future__ import annotations

import pytest

from analysis.patching import CLEAR_GAP, SMALL_GAP, logit_gaps, pick_corruption, prepare
from model import load_model
from ui.patching_inputs import best_corruption, decoder_corruptions, token_count

TEXTS = ["The cat sat on the mat.", "The cat sat on the mat because it was warm.",
         "Every row looks at the first letter."]


@pytest.fixture(scope="module")
def chars():
    return load_model("tiny-chars")


@pytest.mark.parametrize("text", TEXTS)
def test_candidates_keep_the_length_and_gaps_are_what_prepare_measures(chars, text):
    tries = decoder_corruptions(chars, text, 64)
    assert tries and text not in tries
    assert all(token_count(chars, t) == token_count(chars, text) for t in tries)
    assert any(t.endswith(",") for t in tries)  # the closing mark is among them
    gaps = logit_gaps(chars, text, tries)
    for t, g in zip(tries[:4], gaps[:4]):
        p = prepare(chars, text, t)  # the page's metric with its default pair
        assert g == pytest.approx(abs(p.clean_value - p.corrupted_value), abs=1e-4)


@pytest.mark.parametrize("text", TEXTS)
def test_the_default_moves_the_answer_clearly_on_tiny_chars(chars, text):
    """The old default ("…on the rug.") had a gap of 0.19 logits: the page warned of noise."""
    made = best_corruption(chars, text, 64)
    p = prepare(chars, text, made)
    assert abs(p.clean_value - p.corrupted_value) >= CLEAR_GAP > SMALL_GAP


def test_the_pick_prefers_the_first_clear_swap_else_the_largest_gap(chars, monkeypatch):
    from analysis import patching

    monkeypatch.setattr(patching, "logit_gaps", lambda lm, clean, tries: [0.3, 2.5, 9.0])
    assert pick_corruption(chars, "x", ["a", "b", "c"]) == "b"  # most sensible clear one
    monkeypatch.setattr(patching, "logit_gaps", lambda lm, clean, tries: [0.3, 1.1, 0.2])
    assert pick_corruption(chars, "x", ["a", "b", "c"]) == "b"  # none clear: the largest
    assert pick_corruption(chars, "x", []) == ""


def test_too_long_or_unswappable_texts_get_no_default(chars):
    assert decoder_corruptions(chars, "word " * 20, 64) == []  # over the limit
    assert best_corruption(chars, "word " * 20, 64) == ""
    with pytest.raises(ValueError, match="same number of tokens"):
        logit_gaps(chars, "The cat.", ["The dog!!"])


def test_a_text_whose_words_have_no_same_length_swap_still_gets_one(chars):
    """"Use the first 61 tokens" of the lighthouse paragraph ends in "…every evening to": the
    first 24 word swaps all change the length, so the last letter's swaps must still be
    reached (they were cut off, and the corrupted prompt came up empty)."""
    text = "The old lighthouse keeper climbed the stairs every evening to"
    made = best_corruption(chars, text, 64)
    assert made and token_count(chars, made) == token_count(chars, text)
    p = prepare(chars, text, made)
    assert abs(p.clean_value - p.corrupted_value) >= SMALL_GAP


def test_the_flip_default_changes_the_top_token_before_the_last_one(chars):
    """The default corrupted prompt: a change before the last token after which the top next token differs."""
    from ui.patching_inputs import flip_corruption, flip_corruptions

    text = "The cat sat on the mat."
    tries = flip_corruptions(chars, text, 64)
    ids = chars.encode(text).input_ids[0].tolist()
    assert tries and all(chars.encode(t).input_ids[0].tolist()[-1] == ids[-1] for t in tries)
    made = flip_corruption(chars, text, 64)
    assert made in tries
    top = [int(chars.run(t).logits[0, -1].argmax()) for t in (made, text)]
    assert top[0] != top[1]
    assert flip_corruptions(chars, "word " * 20, 64) == []  # over the limit


def test_pick_flip_keeps_only_candidates_whose_top_token_differs(chars, monkeypatch):
    import torch

    from analysis import patching

    logits = torch.tensor([[3.0, 1.0, 0.0], [2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 5.0, 0.0]])
    monkeypatch.setattr(patching, "_last_logits", lambda lm, texts, chunk=16: logits)
    assert patching.pick_flip(chars, "x", ["same", "flip", "bigger flip"]) == "bigger flip"
    monkeypatch.setattr(patching, "_last_logits", lambda lm, texts, chunk=16: logits[:2])
    assert patching.pick_flip(chars, "x", ["same"]) == ""
