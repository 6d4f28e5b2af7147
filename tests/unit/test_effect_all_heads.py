"""analysis/effect.py `all_heads`: computed once, then any layer and head is picked cheaply;
occlusion can be left out (long texts) without hiding that it was."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.ablation import Inputs
from analysis.effect import (
    MAX_OCCLUSION_TOKENS, all_heads, attention_norm_scores, query_weights,
)
from analysis.effect_target import make_target

TEXT = "The cat sat on the mat."


def test_every_layer_and_head_matches_the_direct_computation(tiny_models_loaded):
    gpt2 = tiny_models_loaded["gpt2"]
    inputs = Inputs.encode(gpt2, TEXT)
    target = make_target(gpt2, inputs, position=4)
    every = all_heads(gpt2, inputs, target, steps=8)
    trace = gpt2.run(TEXT)
    weights = query_weights(target, inputs.input_ids.shape[1])
    for layer in range(2):
        for head in (None, 0, 3):
            imp = every.importance(layer, head)
            expected = (trace.attention(layer, head)[4].numpy() if head is not None
                        else trace.attentions[layer].mean(0)[4].numpy())
            np.testing.assert_allclose(imp.scores["attention"], expected, atol=1e-6)
            np.testing.assert_allclose(
                imp.scores["attention_norm"],
                attention_norm_scores(gpt2, trace, layer, head, weights), atol=1e-6)
    one, other = every.importance(0, 1), every.importance(1, 2)
    assert one.correlations["attention"] == pytest.approx(1.0)
    assert one.correlations["rollout"] != other.correlations["rollout"]  # rows differ
    np.testing.assert_array_equal(one.scores["occlusion"], other.scores["occlusion"])
    with pytest.raises(ValueError, match="layer must be"):
        every.importance(2, 0)


def test_occlusion_left_out_is_nan_and_its_bound_does_not_apply(minilm):
    long = Inputs.encode(minilm, " ".join(["word"] * (MAX_OCCLUSION_TOKENS + 5)))
    target = make_target(minilm, long)
    with pytest.raises(ValueError, match=f"at most {MAX_OCCLUSION_TOKENS} tokens"):
        all_heads(minilm, long, target, steps=4)
    short = Inputs.encode(minilm, TEXT)
    every = all_heads(minilm, short, make_target(minilm, short), steps=4, occlusion_mode=None)
    imp = every.importance(1, None)
    assert np.isnan(imp.scores["occlusion"]).all() and np.isnan(every.head_correlations).all()
    assert np.isnan(imp.correlations["occlusion"])
    assert np.isfinite(imp.correlations["integrated_gradients"])
    assert imp.occlusion_mode is None and every.head_rows.shape == (6, 12, len(every.tokens))


def test_a_space_token_is_named_visibly_in_the_target():
    from model import load_model

    chars = load_model("tiny-chars")
    inputs = Inputs.encode(chars, "the cat")
    target = make_target(chars, inputs, position=2)  # "e", followed by a space
    assert "finds “␣” as the next token after “e”" in target.label
    assert target.token_id == int(inputs.input_ids[0, 3])
