"""Session-8 fixes, unit level: the logit lens's detail table as narrow text cells, why a
generation stopped, and which special tokens a text holds (the heads page's wording)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.generation import generate_ids
from analysis.head_stats import special_tokens_in
from model import load_model
from viz.lens import DETAIL_TOKEN_CHARS, detail_columns


@pytest.fixture(scope="module")
def tiny_chars():
    return load_model("tiny-chars")


def test_detail_columns_put_token_and_probability_in_one_cell():
    rows = ["embeddings", "after layer 0"]
    tokens = [["␣", "e", "a"], ["n", "a very long token indeed", "x"]]
    probs = np.array([[0.611, 0.387, 0.0015], [0.934, 0.017, 0.00000001]])
    cols = detail_columns(rows, tokens, probs, np.array([3, 1]), np.array([0.0015, 0.934]))
    assert list(cols) == ["layer", "#1", "#2", "#3", "true next"]  # no separate p columns
    assert cols["layer"] == rows
    assert cols["#1"] == ["␣ 61%", "n 93%"]
    assert cols["#3"] == ["a 0.15%", "x < 0.01%"]  # percent, never "1.5e-03"
    long = cols["#2"][1]
    assert long.startswith("a very") and "…" in long and long.endswith(" 1.7%")
    assert len(long.split(" 1.7%")[0]) == DETAIL_TOKEN_CHARS
    assert cols["true next"] == ["#3 · 0.15%", "#1 · 93%"]
    # the last position has no true next token: no such column
    assert "true next" not in detail_columns(rows, tokens, probs)
    with pytest.raises(ValueError):
        detail_columns(rows[:1], tokens, probs)


def test_a_generation_says_why_it_stopped(tiny_chars):
    prompt = tiny_chars.encode("The cat sat").input_ids[0].tolist()
    full = generate_ids(tiny_chars, prompt, 7)
    assert not full.stopped_at_end and len(full.new_ids) == 7
    assert full.why_stopped.startswith("Stopped after 7 new tokens, the number asked for")
    first = full.new_ids[2]  # stop on the third token written: an end token here
    early = generate_ids(tiny_chars, prompt, 7, stop_ids=[first])
    n = full.new_ids.index(first) + 1
    assert early.stopped_at_end and len(early.new_ids) == n < 7
    assert early.why_stopped == (f"Stopped after {n} new token{'s' * (n != 1)}: the model wrote "
                                 "an end token.")


def test_special_tokens_in_a_text(minilm, tiny_chars):
    assert special_tokens_in(minilm.run("The cat sat.")) == ["[CLS]", "[SEP]"]
    assert special_tokens_in(tiny_chars.run("The cat sat.")) == []  # every character is text
    pair = minilm.run("The cat sat.", "A dog ran.")
    assert special_tokens_in(pair) == ["[CLS]", "[SEP]"]  # each named once
