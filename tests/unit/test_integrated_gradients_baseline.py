"""Integrated gradients add up at the effect page's default start, on every family.

Completeness: the scores sum to target(text) − target(baseline). From zero vectors that fails
on Llama-style models (RMSNorm, positions only inside attention: the residual stream is exactly
zero there, and the integrand is a spike no affordable number of steps resolves). The default
start, the padding token, keeps it within 1% at the page's default step count on tiny GPT-2,
a tiny Llama with grouped-query attention and the bundled MiniLM; the scores equal Captum's
where Captum is installed; and the page's words flag a sum that misses more than 5%.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.ablation import Inputs
from analysis.effect import all_heads
from analysis.effect_target import make_target, prefix, score, visible_length
from analysis.gradients import (
    DEFAULT_BASELINE, GAP_WARN_SHARE, baseline_embeddings, default_baseline,
    integrated_gradients, token_embeddings, zero_start_is_empty,
)
from teaching.pages import BY_PATH
from app_pages.effect.words import baseline_names, gap_line, gap_warning, ig_notes
from ui.text import md_escape

TEXTS = ("The cat sat on the mat.", "Attention lets every token look at every other token.")
PAGE_STEPS = BY_PATH["effect"].by_name["steps"].default  # what the page runs without a click
PAGE_BASELINE = BY_PATH["effect"].by_name["baseline"].default


def _model(family, tiny_models_loaded, minilm):
    return minilm if family == "minilm" else tiny_models_loaded[family]


def _targets(loaded, text):
    """The page's target for an encoder; for a decoder, the last and a middle position."""
    inputs = Inputs.encode(loaded, text)
    if not loaded.cfg.causal:
        return inputs, [make_target(loaded, inputs)]
    n = inputs.input_ids.shape[1]
    return inputs, [make_target(loaded, inputs, position=p) for p in (n - 1, n // 2)]


def test_the_page_starts_where_the_analysis_does():
    assert PAGE_BASELINE == DEFAULT_BASELINE == "pad"
    assert PAGE_STEPS == 64


@pytest.mark.parametrize("family", ["gpt2", "llama", "minilm"])
def test_the_default_start_adds_up_within_one_percent(family, tiny_models_loaded, minilm):
    loaded = _model(family, tiny_models_loaded, minilm)
    if family == "llama":  # grouped-query attention: 4 query heads share 2 key/value heads
        assert loaded.cfg.n_kv_heads < loaded.cfg.n_heads
    for text in TEXTS:
        inputs, targets = _targets(loaded, text)
        for target in targets:
            result = integrated_gradients(loaded, target, inputs, steps=PAGE_STEPS)
            assert abs(result.change) > 0.05, (text, target.position)  # a change to explain
            assert result.gap_share <= 0.01, (text, target.position, result.gap_share)
            assert result.adds_up
    assert default_baseline(loaded) == result.baseline == "pad"


def test_zero_vectors_leave_a_llama_nothing_and_do_not_add_up(tiny_models_loaded, minilm):
    llama, gpt2 = tiny_models_loaded["llama"], tiny_models_loaded["gpt2"]
    assert zero_start_is_empty(llama)
    assert not zero_start_is_empty(gpt2) and not zero_start_is_empty(minilm)
    inputs, targets = _targets(llama, TEXTS[0])
    shares = [integrated_gradients(llama, t, inputs, "zero", steps=PAGE_STEPS).gap_share
              for t in targets]
    assert max(shares) > GAP_WARN_SHARE  # why zero vectors are not the default


def test_the_whole_page_computation_uses_the_default_start(tiny_models_loaded):
    llama = tiny_models_loaded["llama"]
    inputs, (target, _) = _targets(llama, TEXTS[0])
    every = all_heads(llama, inputs, target, steps=8, occlusion_mode=None)
    assert every.ig.baseline == "pad"
    direct = integrated_gradients(llama, target, inputs, "pad", steps=8)
    np.testing.assert_allclose(every.ig.attributions, direct.attributions, rtol=0, atol=1e-7)


def test_a_tokenizer_without_padding_starts_from_zeros(tiny_chars):
    # the project's own character models: positions are added before the first norm
    assert default_baseline(tiny_chars) == "zero"
    assert not zero_start_is_empty(tiny_chars)
    inputs, (target, _) = _targets(tiny_chars, "the cat sat on the mat")
    result = integrated_gradients(tiny_chars, target, inputs, steps=PAGE_STEPS)
    assert result.baseline == "zero" and result.gap_share <= 0.01


@pytest.mark.parametrize("family", ["gpt2", "llama", "minilm"])
def test_the_scores_equal_captums(family, tiny_models_loaded, minilm):
    captum_attr = pytest.importorskip("captum.attr")
    loaded = _model(family, tiny_models_loaded, minilm)
    inputs, targets = _targets(loaded, TEXTS[0])
    target = targets[-1]
    ours = integrated_gradients(loaded, target, inputs, steps=PAGE_STEPS)
    seen = prefix(inputs, visible_length(target, inputs.input_ids.shape[1]))
    args = (seen.input_ids, seen.attention_mask, seen.token_type_ids)
    x = token_embeddings(loaded, seen)  # [1, k, d_model]
    base = baseline_embeddings(loaded, seen, DEFAULT_BASELINE)  # [1, k, d_model]
    ig = captum_attr.IntegratedGradients(lambda tok: score(loaded, target, *args, tok=tok))
    theirs, delta = ig.attribute(x, baselines=base, n_steps=PAGE_STEPS,
                                 method="gausslegendre", return_convergence_delta=True)
    theirs = theirs[0].sum(-1).double().numpy()  # [k]
    k = theirs.shape[0]
    # float32 gradients summed in a different order: agree to 1e-4 of the largest score
    scale = np.abs(theirs).max()
    np.testing.assert_allclose(ours.attributions[:k], theirs, rtol=0, atol=1e-4 * scale)
    assert abs(float(delta)) <= 0.01 * abs(ours.change)  # Captum's own completeness check


def test_the_words_flag_a_sum_that_misses_more_than_five_percent(tiny_models_loaded, minilm):
    llama = tiny_models_loaded["llama"]
    inputs, targets = _targets(llama, TEXTS[0])
    names = baseline_names(llama)
    assert names["pad"] == md_escape("padding tokens (</s>)")  # the token, Markdown-safe
    good = integrated_gradients(llama, targets[0], inputs, steps=PAGE_STEPS)
    assert gap_warning(good, True, 256) is None
    assert "of that change" in gap_line(good, names) and "e-0" not in gap_line(good, names)
    bad = max((integrated_gradients(llama, t, inputs, "zero", steps=PAGE_STEPS)
               for t in targets), key=lambda r: r.gap_share)
    warning = gap_warning(bad, zero_start_is_empty(llama), 256)
    assert warning is not None and "More steps will not fix that" in warning
    assert "padding token" in warning
    # the same miss on a model where zeros are fine is a matter of steps
    assert "try 256 steps" in gap_warning(bad, False, 256)
    assert "no padding token" in gap_warning(bad, True, 256, has_pad=False)
    assert "try" not in gap_warning(bad, False, None).split("follow")[0]
    assert baseline_names(minilm)["pad"] == md_escape("padding tokens ([PAD])")


def test_a_start_that_equals_the_text_has_nothing_to_share(tiny_models_loaded):
    gpt2 = tiny_models_loaded["gpt2"]
    pad = gpt2.tokenizer._tok.pad_token_id  # GPT-2 pads with <|endoftext|>
    ids = torch.full((1, 3), pad)
    inputs = Inputs(ids, torch.ones_like(ids), torch.zeros_like(ids))
    target = make_target(gpt2, inputs, position=2, token_id=5)
    result = integrated_gradients(gpt2, target, inputs, steps=4)
    assert result.change == 0 and np.isnan(result.gap_share) and result.adds_up
    assert "nothing to share out" in gap_line(result, baseline_names(gpt2))
    assert gap_warning(result, False, 256) is None


def test_the_page_notes_warn_only_when_the_sum_misses(tiny_models_loaded):
    llama = tiny_models_loaded["llama"]
    inputs, targets = _targets(llama, TEXTS[0])
    good = integrated_gradients(llama, targets[0], inputs, steps=PAGE_STEPS)
    caption, warning = ig_notes(llama, good, 128)
    assert warning is None and caption.startswith(f"Integrated gradients: {PAGE_STEPS} steps "
                                                  "from padding tokens")
    bad = max((integrated_gradients(llama, t, inputs, "zero", steps=PAGE_STEPS)
               for t in targets), key=lambda r: r.gap_share)
    caption, warning = ig_notes(llama, bad, 128)
    assert "zero vectors" in caption and "More steps will not fix that" in warning
