"""One attention score taken apart: for every family the engine runs, at every layer and a
sample of heads and cells, the query-part × key-part grid (plus T5's relative-position bias
and Gemma 2's cap) adds up to the engine's own pre-softmax score; rotary bands add up to it
too, and the rotary curve at the pair's own distance is the pair's score."""

from __future__ import annotations

import numpy as np
import pytest

import tiny_decoders
import tiny_encoders
import tiny_seq2seq
from analysis.score_parts import decompose_cell, part_label
from analysis.stream_parts import GROUPS, group_of
from model import load_model

TEXT = "The cat sat on the mat. A dog chased the ball"
OWN_TEXT = "abcabcabxy"
# The engine computes in float32 and the parts are added in float64: the rounding of a
# float32 score is about 1e-7 of the size of the vectors multiplied, so a score near 0 is
# compared with 1e-5 of 1 instead of 1e-5 of itself. Observed: at most 3e-6 absolute.
RTOL = 1e-5


def close(a: float, b: float) -> bool:
    return abs(a - b) <= RTOL * max(1.0, abs(b))


@pytest.fixture(scope="module")
def every_model(tiny_models_loaded, tmp_path_factory):
    root = tmp_path_factory.mktemp("score_parts")
    models = dict(tiny_models_loaded)
    models.update({f: load_model(str(tiny_decoders.saved(f))) for f in tiny_decoders.BUILDERS})
    models.update({f: load_model(str(build(root / f)))
                   for f, build in tiny_encoders.BUILDERS.items()})
    models.update({f: load_model(str(tiny_seq2seq.folder(f)), device="cpu")
                   for f in tiny_seq2seq.FAMILIES})
    models.update({n: load_model(n) for n in ("minilm", "tiny-chars", "tiny-induction",
                                              "tiny-reverse")})
    return models


FAMILIES = ["bert", "roberta", "gpt2", "llama", *tiny_decoders.BUILDERS,
            *tiny_encoders.BUILDERS, *tiny_seq2seq.FAMILIES,
            "minilm", "tiny-chars", "tiny-induction", "tiny-reverse"]


def _cells(n: int) -> list[tuple[int, int]]:
    return [(n - 1, 0), (n - 1, n - 2), (n // 2, n // 2), (n // 2, 1), (2, 1)]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_parts_add_up_to_the_engines_score(family, every_model):
    lm = every_model[family]
    trace = lm.run(OWN_TEXT if family.startswith("tiny-") else TEXT)
    n, cfg = trace.n_tokens, lm.cfg
    heads = sorted({0, cfg.n_heads // 2, cfg.n_heads - 1})
    checked = 0
    for layer in range(cfg.n_layers):
        for head in heads:
            for query, key in _cells(n):
                if cfg.causal and key > query:
                    continue
                try:
                    cell = decompose_cell(lm, trace, layer, head, query, key)
                except ValueError as exc:  # a sliding window hides the key: says so
                    assert "tokens back" in str(exc) and query - key >= cfg.sliding_window
                    continue
                checked += 1
                assert close(cell.total(), cell.score), (layer, head, query, key)
                qg, kg, grouped = cell.grouped()
                assert close(float(grouped.sum()) + sum(cell.extra.values()), cell.score)
                assert set(qg) <= set(GROUPS) and set(kg) <= set(GROUPS)
                if cfg.positions == "rotary":
                    bands = float(cell.bands.sum()) + cell.unrotated
                    assert close(bands + sum(cell.extra.values()), cell.score)
    assert checked >= cfg.n_layers * len(heads) * 2


@pytest.mark.parametrize("family", ["llama", "neox", "qwen2", "gemma2", "phi3"])
def test_the_rotary_curve_at_the_pairs_own_distance_is_its_score(family, every_model):
    lm = every_model[family]
    trace = lm.run(TEXT)
    n = trace.n_tokens
    cell = decompose_cell(lm, trace, lm.cfg.n_layers - 1, 0, n - 1, n - 4)
    own = list(cell.distances).index(3)
    assert close(float(cell.curve[own]), cell.score)
    assert len(cell.bands) == cell.band_periods.shape[0]
    assert np.all(np.diff(cell.band_periods) > 0)  # slow bands last
    assert not np.allclose(cell.curve, cell.curve[0])  # the distance matters in a random model


def test_the_parts_are_the_streams_own(every_model):
    """The embeddings and every earlier head show up as parts, named plainly, each once."""
    lm = every_model["gpt2"]
    trace = lm.run(TEXT)
    cell = decompose_cell(lm, trace, 1, 0, 5, 2)
    labels = [part_label(k) for k in cell.q_keys]
    assert len(labels) == len(set(labels))
    assert {"token embedding", "position embedding", "layer 0 head 0", "layer 0 MLP",
            "query bias"} <= set(labels)
    assert {group_of(k) for k in cell.k_keys} == {"token", "position", "attention", "mlp",
                                                  "bias"}


def test_t5_and_gemma2_name_their_extra_terms(every_model):
    t5 = decompose_cell(every_model["t5"], every_model["t5"].run(TEXT), 0, 1, 3, 1)
    assert t5.extra["relative position"] != 0.0
    g2 = every_model["gemma2"]
    cell = decompose_cell(g2, g2.run(TEXT), 0, 0, 3, 1)
    assert g2.cfg.attn_softcap is not None and "soft cap" in cell.extra
    capped = g2.cfg.attn_softcap * np.tanh(cell.grid.sum() / g2.cfg.attn_softcap)
    assert close(cell.grid.sum() + cell.extra["soft cap"], float(capped))


def test_grouped_query_attention_says_which_key_head(every_model):
    lm = every_model["llama"]  # 4 query heads, 2 key heads
    cell = decompose_cell(lm, lm.run(TEXT), 0, 3, 4, 2)
    assert cell.kv_head == 1 and cell.shared_with == [2, 3]


def test_a_cell_the_query_cannot_see_is_refused_in_words(every_model):
    lm = every_model["gpt2"]
    trace = lm.run(TEXT)
    with pytest.raises(ValueError, match="left to right"):
        decompose_cell(lm, trace, 0, 0, 1, 4)
    with pytest.raises(ValueError, match="head must be"):
        decompose_cell(lm, trace, 0, lm.cfg.n_heads, 1, 0)
    with pytest.raises(ValueError, match="query position"):
        decompose_cell(lm, trace, 0, 0, trace.n_tokens, 0)
