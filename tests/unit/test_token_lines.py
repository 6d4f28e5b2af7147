"""Token lines at any length (viz/lines.py line_data): the data the line component draws is
plain text (set as text, never HTML), each query's strongest keys per head, at 325 tokens too."""

from __future__ import annotations

import numpy as np
import pytest

from viz.lines import LINES_PER_QUERY, MIN_WEIGHT, line_data
from viz.style import HEAD_COLOURS


def test_lines_follow_the_weights_of_each_chosen_head():
    w = np.zeros((3, 3, 3), dtype=np.float32)
    w[0] = [[1, 0, 0], [0.7, 0.3, 0], [0.01, 0.5, 0.49]]
    w[2] = np.eye(3)
    data = line_data(w, ["a", "b", "c"], [2, 0, 2])
    assert data["colours"] == {"2": HEAD_COLOURS[2], "0": HEAD_COLOURS[0]}
    by_head = {h: {(q, k): wt for q, k, wt, hh in data["lines"] if hh == h} for h in (0, 2)}
    assert by_head[2] == {(0, 0): 1.0, (1, 1): 1.0, (2, 2): 1.0}
    assert by_head[0] == {(0, 0): 1.0, (1, 0): 0.7, (1, 1): 0.3, (2, 1): 0.5, (2, 2): 0.49}
    assert (2, 0) not in by_head[0]  # 0.01 < MIN_WEIGHT
    assert MIN_WEIGHT > 0.01


def test_tokens_are_plain_text_with_their_position():
    data = line_data(np.full((1, 3, 3), 1 / 3), ["<script>", "a&b", " x"], [0])
    assert data["tokens"] == ["0·<script>", "1·a&b", "2·␣x"]  # not escaped: set as text


def test_a_long_text_draws_each_querys_strongest_keys_only():
    n = 325
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.full(n, 0.05), size=(2, n)).astype(np.float32)
    data = line_data(w, [f"t{i}" for i in range(n)], [0, 1])
    assert len(data["tokens"]) == n
    per_query = {}
    for q, k, wt, h in data["lines"]:
        per_query.setdefault((h, q), []).append(wt)
        assert wt >= MIN_WEIGHT
    assert max(len(v) for v in per_query.values()) <= LINES_PER_QUERY
    for (h, q), weights in per_query.items():  # the strongest: nothing left out is stronger
        assert min(weights) >= np.sort(w[h, q])[-len(weights)] - 1e-3


def test_bad_shapes_and_heads_are_refused_in_words():
    with pytest.raises(ValueError, match="head, 3, 3"):
        line_data(np.zeros((2, 4, 4)), list("abc"), [0])
    with pytest.raises(ValueError, match="must lie in"):
        line_data(np.zeros((2, 3, 3)), list("abc"), [2])
    assert line_data(np.zeros((2, 3, 3)), list("abc"), [])["lines"] == []
