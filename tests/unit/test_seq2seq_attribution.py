"""Direct logit attribution in the decoder of an encoder–decoder (analysis/seq2seq_attribution.py)
on tiny random-weight T5, T5 v1.1 (gated, untied head), BART and Marian folders saved by
transformers (tests/tiny_seq2seq.py): the parts add up to our model's logit and to Hugging
Face's logit on the same weights, at every decoder position, for one logit and a difference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tiny_seq2seq
from analysis.seq2seq_attribution import attribute_seq2seq

SOURCE = "the cat sat on the mat"
# float32 activations summed in float64 over ~40 parts of size ~1: rounding stays near 1e-6;
# 1e-4 is the bar the issue sets for parity.
TOL = 1e-4


def _inputs(lm):
    src = lm.encode(SOURCE).input_ids[0]  # [src_pos]
    dec = torch.tensor([lm.model.spec.start_id, 5, 9, 11, 3, 7])  # [out_pos], teacher forced
    return src, dec


@pytest.mark.parametrize("family", ["t5", "t5_gated", "bart", "marian"])
def test_parts_add_up_to_ours_and_to_hugging_faces_logit(family):
    lm, hf = tiny_seq2seq.loaded(family)
    src, dec = _inputs(lm)
    with torch.no_grad():
        ref = hf(input_ids=src[None], decoder_input_ids=dec[None]).logits[0].double()
    for pos in range(dec.numel()):
        a = attribute_seq2seq(lm, src, dec, pos)  # the model's top token
        assert a.target == int(ref[pos].argmax())
        assert abs(a.total() - a.value) < TOL
        assert abs(a.total() - float(ref[pos, a.target])) < TOL
        d = attribute_seq2seq(lm, src, dec, pos, target=7, baseline=4)
        assert abs(d.total() - float(ref[pos, 7] - ref[pos, 4])) < TOL


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_every_kind_of_part_is_counted(family):
    """Self heads, cross heads, MLPs (and BART's logits' bias) all carry
    something: leaving one kind out breaks the sum, so none is silently zero."""
    lm, _ = tiny_seq2seq.loaded(family)
    src, dec = _inputs(lm)
    a = attribute_seq2seq(lm, src, dec, 3, target=7)
    cfg = lm.model.dec_cfg
    assert a.self_heads.shape == a.cross_heads.shape == (cfg.n_layers, cfg.n_heads)
    kinds = [a.self_heads.sum(), a.cross_heads.sum(), a.mlps.sum()]
    if family == "bart":
        kinds.append(a.logits_bias)
        assert "position" in a.embeddings
        assert a.post_norm and a.norm_scale is None
    else:
        assert a.logits_bias == 0 and set(a.embeddings) == {"token"}
        assert a.out_scale == pytest.approx(cfg.d_model ** -0.5)  # tied head: the scaling
    for part in kinds:
        assert abs(a.total() - part - a.value) > 10 * TOL
    rows = a.per_layer()  # [layer, 3]
    assert np.isclose(rows.sum() + sum(a.embeddings.values()) + a.norm_bias.sum()
                      + a.embed_norm_bias + a.logits_bias, a.total())
    assert np.isclose(sum(v for _, v in a.components()), a.total())


def test_t5_frozen_scale_is_the_final_norms():
    lm, _ = tiny_seq2seq.loaded("t5")
    src, dec = _inputs(lm)
    cache = {}
    from model.hooks import caching_hook, hooks
    name = f"decoder.blocks.{lm.model.dec_cfg.n_layers - 1}.hook_resid_post"
    with torch.no_grad(), hooks(lm.hook_names, [(name, caching_hook(cache))]):
        lm.model(src[None], decoder_input_ids=dec[None])
    x = cache[name][0, 2].double()
    norm = lm.model.decoder.ln_final
    a = attribute_seq2seq(lm, src, dec, 2)
    assert a.norm_scale == pytest.approx(float(torch.rsqrt(x.pow(2).mean() + norm.eps)))


def test_bad_input_is_refused_in_words():
    lm, _ = tiny_seq2seq.loaded("t5")
    src, dec = _inputs(lm)
    with pytest.raises(ValueError, match="position"):
        attribute_seq2seq(lm, src, dec, 99)
    with pytest.raises(ValueError, match="differ"):
        attribute_seq2seq(lm, src, dec, 0, target=3, baseline=3)
    with pytest.raises(ValueError, match="token ids"):
        attribute_seq2seq(lm, src, torch.tensor([0, 10 ** 6]), 0)


def test_tiny_reverse_parts_add_up_to_its_logit():
    """The project's own encoder–decoder (no Hugging Face counterpart): its final LayerNorm's
    bias is a part of its own, and the parts add up to the logit of its run."""
    from model.loading import load_model

    lm = load_model("tiny-reverse", device="cpu")
    trace = lm.run("softmax")
    src, dec = trace.token_ids.reshape(-1)[:trace.n_tokens], trace.decoder_ids[0]
    for pos in range(dec.numel()):
        a = attribute_seq2seq(lm, src, dec, pos)
        assert a.target == int(trace.decoder_logits[0, pos].argmax())
        assert abs(a.total() - float(trace.decoder_logits[0, pos].max())) < TOL
        assert a.final_norm_bias != 0 and set(a.embeddings) == {"token", "position"}
