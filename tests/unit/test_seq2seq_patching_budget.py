"""Encoder–decoder patching and the working memory (analysis/cost.py and
analysis/seq2seq_patching.py): the plan grows with the source and the output, its chunks fit
the allowance, and grids run in small chunks equal the grids run in one piece, with progress
counted cell by cell."""

from __future__ import annotations

import numpy as np
import pytest

import tiny_seq2seq
from analysis.cost import seq2seq_chunk, seq2seq_patching_bytes, seq2seq_patching_plan
from analysis.seq2seq_patching import (decoder_head_patching, decoder_residual_patching,
                                       encoder_residual_patching, prepare_seq2seq)

CLEAN, CORRUPT = "the cat sat on the mat", "the dog sat on the mat"
MB = 2**20


def test_the_plan_grows_with_the_source_and_the_output():
    lm, _ = tiny_seq2seq.loaded("t5")
    cfg, dec = lm.cfg, lm.model.dec_cfg
    base = seq2seq_patching_plan(cfg, dec, 10, 10, 512 * MB)
    longer_source = seq2seq_patching_plan(cfg, dec, 40, 10, 512 * MB)
    longer_output = seq2seq_patching_plan(cfg, dec, 10, 40, 512 * MB)
    for bigger in (longer_source, longer_output):
        assert bigger.least > base.least and bigger.most > base.most
        assert bigger.seconds > base.seconds
    assert base.least < base.most  # several copies at once fit 512 MB
    # an allowance that fits one copy only: the plan is its smallest pieces
    assert seq2seq_patching_plan(cfg, dec, 10, 10, 1).most == base.least


@pytest.mark.parametrize("encoder", [True, False])
def test_a_chunk_fits_its_allowance(encoder):
    lm, _ = tiny_seq2seq.loaded("bart")
    cfg, dec = lm.cfg, lm.model.dec_cfg
    three = seq2seq_patching_bytes(cfg, dec, 12, 9, 3, encoder)
    assert seq2seq_chunk(cfg, dec, 12, 9, 50, encoder, three) == 3
    assert seq2seq_chunk(cfg, dec, 12, 9, 50, encoder, three - 1) == 2
    assert seq2seq_chunk(cfg, dec, 12, 9, 2, encoder, 512 * MB) == 2  # never more than most


def _prepared(family):
    lm, _ = tiny_seq2seq.loaded(family)
    a, b = lm.encode(CLEAN).input_ids[0], lm.encode(CORRUPT).input_ids[0]
    return lm, prepare_seq2seq(lm, a, b, lm.run(CLEAN).decoder_ids[0][:10])


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_small_chunks_give_the_same_grids_with_progress(family):
    lm, p = _prepared(family)
    cfg, dec = lm.cfg, lm.model.dec_cfg
    one = seq2seq_patching_bytes(cfg, dec, p.n_src, p.position + 1, 1, True)
    small = 2 * seq2seq_patching_bytes(cfg, dec, p.n_src, p.position + 1, 1, False)
    calls: dict[str, list] = {"enc": [], "heads": [], "dec": []}

    def record(name):
        return lambda done, total: calls[name].append((done, total))

    np.testing.assert_allclose(
        encoder_residual_patching(p, record("enc"), allowance=one),
        encoder_residual_patching(p, allowance=512 * MB), atol=1e-5)
    pieces = decoder_head_patching(p, record("heads"), allowance=small)
    whole = decoder_head_patching(p, allowance=512 * MB)
    for got, want in zip(pieces, whole):
        np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(decoder_residual_patching(p, record("dec"), allowance=small),
                               decoder_residual_patching(p, allowance=512 * MB), atol=1e-5)
    cells = {"enc": (cfg.n_layers + 1) * p.n_src, "heads": 2 * dec.n_layers * dec.n_heads,
             "dec": (dec.n_layers + 1) * (p.position + 1)}
    for name, seen in calls.items():
        assert seen[-1] == (cells[name], cells[name])  # every cell counted once
        assert [d for d, _ in seen] == sorted({d for d, _ in seen})  # rising
    assert len(calls["enc"]) == cells["enc"]  # one copy per pass
    assert len(calls["heads"]) == 2 * dec.n_layers * -(-dec.n_heads // 2)  # two heads a pass
