"""Head statistics of a decoder gain an induction score and a previous-token score per head,
measured once per model on fresh random repeated tokens (the patching page's scores), with
each column explained in one plain sentence; an encoder gets neither column."""

from __future__ import annotations

import json
import os

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text  # noqa: E402

TEXT = "abcabcabc"


def _frame(at):
    (table,) = [d for d in at.dataframe if "head" in d.value.columns]
    return table.value, json.loads(table.proto.columns)


def test_decoders_show_induction_and_previous_token_scores():
    from analysis.induction import repeat_scores
    from model import load_model

    at = open_page("heads", "tiny-induction", TEXT)
    frame, config = _frame(at)
    assert {"Induction score", "Previous-token score"} <= set(frame.columns)
    loaded = load_model("tiny-induction")
    scores = repeat_scores(loaded.model, n_seqs=64, length=20)
    by_head = dict(zip(frame["head"], frame["Induction score"]))
    for layer in range(loaded.cfg.n_layers):
        for head in range(loaded.cfg.n_heads):
            expected = 100 * float(scores["induction"][layer, head])
            assert np.isclose(by_head[f"L{layer} H{head}"], expected, atol=1e-3)
    assert max(by_head.values()) > 50  # this model was trained to have induction heads
    said = page_text(at, kinds=("caption",))
    assert "random tokens written twice" in said and "token that came right after" in said
    assert "just before it" in said


def test_an_encoder_has_no_repeat_scores():
    at = open_page("heads", "minilm", "The cat sat on the mat.")
    frame, _ = _frame(at)
    assert "Induction score" not in frame.columns
