"""Activation patching for encoder–decoders (analysis/seq2seq_patching.py) on tiny random-weight
T5, BART and Marian folders (tests/tiny_seq2seq.py): the identities hold (nothing patched gives
0, the clean piece that decides everything gives 1), and each batched grid cell equals one
ordinary run of the whole model with that one piece put back by a hook."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tiny_seq2seq
from analysis.seq2seq_patching import (decoder_head_patching, decoder_residual_patching,
                                       encoder_residual_patching, prepare_seq2seq)
from model.hooks import hooks

CLEAN, CORRUPT = "the cat sat on the mat", "the dog sat on the mat"
ATOL = 1e-4  # batched vs one run: float32 sums in another order


def _prepared(family):
    lm, _ = tiny_seq2seq.loaded(family)
    a, b = lm.encode(CLEAN).input_ids[0], lm.encode(CORRUPT).input_ids[0]
    dec = lm.run(CLEAN).decoder_ids[0][:10]
    return lm, prepare_seq2seq(lm, a, b, dec)


def _one_run(lm, p, name, fn) -> float:
    """The normalised metric of one ordinary run of the corrupted source with one hook."""
    with torch.no_grad(), hooks(lm.hook_names, [(name, fn)]):
        out = lm.model(p.corrupted_ids, torch.ones_like(p.corrupted_ids),
                       decoder_input_ids=p.dec_ids)
    row = out.decoder_logits[0, p.position].double()
    return float(p.normalise(row[p.answer] - row[p.wrong]))


def _put_back(clean, index):
    def fn(x, _name):
        out = x.clone()
        out[(0, *index)] = clean[(0, *index)]
        return out
    return fn


@pytest.mark.parametrize("family", ["t5", "bart", "marian"])
def test_identities_and_cells_equal_ordinary_runs(family):
    lm, p = _prepared(family)
    differs = int((p.clean_ids != p.corrupted_ids).nonzero()[0, 1])
    enc = encoder_residual_patching(p)
    cfg, dec_cfg = lm.cfg, lm.model.dec_cfg
    assert enc.shape == (cfg.n_layers + 1, p.n_src)
    # the first row: the sources' embeddings, alike but where the word changed
    assert enc[0, differs] == pytest.approx(1.0, abs=ATOL)
    assert np.abs(np.delete(enc[0], differs)).max() < ATOL
    np.testing.assert_allclose(encoder_residual_patching(p, chunk=3), enc, atol=ATOL)
    name = "blocks.1.hook_resid_pre"
    assert enc[1, 2] == pytest.approx(_one_run(lm, p, name, _put_back(p.clean[name], (2,))),
                                      abs=ATOL)
    own, cross = decoder_head_patching(p)
    assert own.shape == cross.shape == (dec_cfg.n_layers, dec_cfg.n_heads)
    assert np.abs(own[0]).max() < ATOL  # before any cross-attention, both runs are alike
    name = "decoder.blocks.1.cross_attn.hook_z"
    assert cross[1, 2] == pytest.approx(_one_run(lm, p, name, _put_back(p.clean[name], (2,))),
                                        abs=ATOL)
    res = decoder_residual_patching(p)
    assert res.shape == (dec_cfg.n_layers + 1, p.dec_ids.shape[1])
    assert np.abs(res[0]).max() < ATOL  # the decoder's own tokens are the same in both runs
    assert res[-1, p.position] == pytest.approx(1.0, abs=ATOL)
    assert np.abs(np.delete(res[-1], p.position)).max() < ATOL
    name = "decoder.blocks.1.hook_resid_pre"
    cell = _one_run(lm, p, name, _put_back(p.clean[name], (p.position,)))
    assert res[1, p.position] == pytest.approx(cell, abs=ATOL)


def test_all_cross_heads_put_back_give_the_clean_run():
    """The decoder reads the source only through cross-attention: every cross head's output
    put back at once gives the clean run exactly."""
    lm, p = _prepared("bart")
    n = lm.model.dec_cfg.n_layers
    names = [f"decoder.blocks.{i}.cross_attn.hook_z" for i in range(n)]
    fns = [(name, _put_back(p.clean[name], ())) for name in names]
    with torch.no_grad(), hooks(lm.hook_names, fns):
        out = lm.model(p.corrupted_ids, torch.ones_like(p.corrupted_ids),
                       decoder_input_ids=p.dec_ids)
    row = out.decoder_logits[0, p.position].double()
    assert float(p.normalise(row[p.answer] - row[p.wrong])) == pytest.approx(1.0, abs=ATOL)


def test_unequal_sources_are_refused_in_words():
    lm, _ = tiny_seq2seq.loaded("t5")
    a, b = lm.encode(CLEAN).input_ids[0], lm.encode("a much longer text here").input_ids[0]
    with pytest.raises(ValueError, match="same number of tokens"):
        prepare_seq2seq(lm, a, b, [0, 5])
    with pytest.raises(ValueError, match="nothing to recover"):
        prepare_seq2seq(lm, a, a, [0, 5])


def test_tiny_reverse_patching_finds_the_changed_letter():
    """softmax -> softmix: patching the changed letter's embedding brings the whole answer back;
    in the decoder, only where the metric is read does the last row."""
    from model.loading import load_model

    lm = load_model("tiny-reverse", device="cpu")
    a, b = lm.encode("softmax").input_ids[0], lm.encode("softmix").input_ids[0]
    p = prepare_seq2seq(lm, a, b, lm.run("softmax").decoder_ids[0])
    enc = encoder_residual_patching(p)
    changed = int((a != b).nonzero()[0, 0])
    assert enc[0, changed] == pytest.approx(1.0, abs=ATOL)
    res = decoder_residual_patching(p)
    assert res[-1, p.position] == pytest.approx(1.0, abs=ATOL) and np.abs(res[0]).max() < ATOL
