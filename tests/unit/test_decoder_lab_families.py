"""The decoder lab on every decoder family added for issue 28 (checkpoints in
tests/tiny_decoders.py): direct logit attribution adds up to the model's logit, activation
patching's identities hold (the clean residual everywhere gives exactly 1, nothing patched 0,
and a batched cell equals an ordinary patched run), and greedy generation writes what
Hugging Face's `generate` writes."""

from __future__ import annotations

import pytest
import torch

import tiny_decoders
from analysis.attribution import attribute
from analysis.generation import generate
from analysis.logit_lens import lens_logits
from analysis.patching import patched_metric, prepare, residual_patching

FAMILIES = sorted(tiny_decoders.BUILDERS)
TEXT = "Attention lets every token look at every other token."
CLEAN = "A dog chased the ball across the park!"
CORRUPTED = "A cat chased the ball across the park!"  # the same length in tokens
TWO_TEXTS = ["I love cats!", TEXT]  # a padded batch


@pytest.mark.parametrize("family", FAMILIES)
def test_direct_logit_attribution_adds_up_to_the_logit(family):
    lm, hf = tiny_decoders.loaded(family)
    for position in (-1, 3):
        a = attribute(lm, TEXT, position=position)
        assert a.total() == pytest.approx(a.value, abs=1e-4)
        assert abs(a.heads).sum() > 0 and abs(a.mlps).sum() > 0
        ids = lm.encode(TEXT).input_ids
        with torch.no_grad():  # the value is HF's own logit (before Gemma 2's cap)
            hidden = hf(input_ids=ids, output_hidden_states=True).hidden_states[-1]
            theirs = hf.get_output_embeddings()(hidden)[0, position, a.target]
        assert a.value == pytest.approx(float(theirs), abs=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_patching_identities_hold(family):
    lm, _ = tiny_decoders.loaded(family)
    p = prepare(lm, CLEAN, CORRUPTED)
    assert abs(p.clean_value - p.corrupted_value) > 1e-4
    assert patched_metric(p) == 0.0
    n_layers = lm.cfg.n_layers
    for row in (0, n_layers // 2, n_layers):  # the clean stream at every position: clean
        assert patched_metric(p, resid=[(row, i) for i in range(p.n_pos)]) == \
            pytest.approx(1.0, abs=1e-9)
    grid = residual_patching(p)  # [n_layers + 1, pos], batched from each row on
    # a batch of copies rounds float32 a little differently from one run: ~1e-6 here
    assert grid[n_layers, p.position] == pytest.approx(1.0, abs=1e-4)
    for row, pos in ((1, 1), (n_layers - 1, p.n_pos - 2)):  # batched == one ordinary run
        assert grid[row, pos] == pytest.approx(patched_metric(p, resid=[(row, pos)]), abs=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_generation_matches_hf_generate(family):
    lm, hf = tiny_decoders.loaded(family)
    g = generate(lm, "The cat sat on the", 8)
    ids = torch.tensor([g.prompt_ids])
    with torch.no_grad():
        theirs = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8,
                             do_sample=False, eos_token_id=None, pad_token_id=0)
    assert g.ids == theirs[0].tolist()


@pytest.mark.parametrize("family", ["gemma2", "neox", "gpt_neo"])
def test_the_logit_lens_last_row_is_the_models_logits(family):
    lm, _ = tiny_decoders.loaded(family)
    trace = lm.run(TEXT)
    last = trace.cache[f"blocks.{lm.cfg.n_layers - 1}.hook_resid_post"]
    torch.testing.assert_close(lens_logits(lm.model, last), trace.logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_walkthrough_rebuilds_each_layers_scores_from_its_steps(family):
    """The scale step (and Gemma 2's cap) plus the mask step's mask give the scores the model
    softmaxed, on full and sliding layers alike; GPT-NeoX has no stream between attention and
    the MLP to show."""
    from analysis.walkthrough import walkthrough

    lm, _ = tiny_decoders.loaded(family)
    trace = lm.run(TEXT)
    for layer in range(lm.cfg.n_layers):
        steps = {s.key: s for s in walkthrough(trace, layer)}
        scaled = steps["scale"].shown[-1].tensor  # [batch, head, q, k]
        mask = steps["mask"].shown[0].tensor  # [batch, 1, q, k]
        torch.testing.assert_close(scaled + mask, trace.cache[f"blocks.{layer}.attn.hook_scores"],
                                   atol=1e-5, rtol=1e-5)
        assert ("resid_attn" in steps) == (lm.cfg.block != "parallel")


@pytest.mark.parametrize("family", FAMILIES)
def test_check_these_numbers_passes_on_every_family(family):
    """The pages' "Check these numbers" (HF's own model on the same tokens) agrees per layer."""
    from analysis.reference_check import reference_check

    lm, _ = tiny_decoders.loaded(family)
    check = reference_check(lm, tiny_decoders.saved(family), TEXT)
    assert len(check.rows) == lm.cfg.n_layers + 1 and all(row.passed for row in check.rows)


@pytest.mark.parametrize("family", ["neox", "gemma2", "mistral"])
def test_the_head_sweep_reusing_attention_matches_separate_ablated_runs(family):
    """The sweep adds each head's change to hook_attn_out: right for GPT-NeoX's side-by-side
    MLP and for Gemma 2's norm after attention only if that hook is attention's own output."""
    from analysis.ablation import Inputs, effects, forward, importance_sweep, run_ablated

    lm, _ = tiny_decoders.loaded(family)
    inputs = Inputs.encode(lm, TEXT)
    reused = importance_sweep(lm, inputs, "zero", chunk=2)
    clean = forward(lm, inputs)
    for layer, head in ((0, 1), (lm.cfg.n_layers - 1, 0)):
        single = effects(clean, run_ablated(lm, inputs, [(layer, head)], "zero"), inputs)
        for name in single:
            assert reused[name][layer, head] == pytest.approx(float(single[name][0]), abs=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_where_a_row_comes_from_rebuilds_the_pattern_row(family):
    """The attention page's Q·K breakdown (scale, cap, causal and sliding mask, softmax) gives
    the model's own row on every layer, for the last query (the one a window cuts most)."""
    from analysis.qk import qk_breakdown

    lm, _ = tiny_decoders.loaded(family)
    trace = lm.run(TEXT)
    last = trace.n_tokens - 1
    for layer in range(lm.cfg.n_layers):
        row = qk_breakdown(trace, layer, 1, last)
        want = trace.cache[f"blocks.{layer}.attn.hook_pattern"][0, 1, last]
        torch.testing.assert_close(torch.from_numpy(row["softmax"]), want, atol=1e-6, rtol=1e-5)


def test_the_q_k_figure_names_gemma2s_own_scale():
    from analysis.qk import qk_breakdown
    from viz.qk import qk_figure

    lm, _ = tiny_decoders.loaded("gemma2")
    trace = lm.run(TEXT)
    fig = qk_figure(qk_breakdown(trace, 0, 1, 5), trace.tokens)
    assert "× 0.3162" in fig.layout.title.subtitle.text  # 1/√10, query_pre_attn_scalar = 10
    assert "√8" not in fig.layout.title.subtitle.text  # not 1/√d_head


@pytest.mark.parametrize("family", ["qwen3", "gemma2", "gemma3", "neox"])
def test_every_walkthrough_tensor_says_where_it_comes_from_in_plain_words(family):
    from analysis.walkthrough import walkthrough
    from analysis.walkthrough.steps import where_from

    lm, _ = tiny_decoders.loaded(family)
    for step in walkthrough(lm.run(TEXT), 0):
        for shown in step.shown:
            words = where_from(shown)
            assert "a tensor" not in words and "hook_" not in words, (step.key, words)


@pytest.mark.parametrize("family", ["gemma2", "mistral", "neox"])
def test_the_engines_pieces_compose_into_its_forward(family):
    """run_blocks from layer 0 to k, then from k on, then logits_from: the forward's logits,
    with each layer's own window and Gemma 2's caps, for analyses that run part of a model."""
    lm, _ = tiny_decoders.loaded(family)
    trace = lm.run(TWO_TEXTS)
    model, mask = lm.model, trace.attention_mask
    with torch.no_grad():
        x = model.embed(trace.input_ids, trace.token_type_ids)  # [batch, pos, d_model]
        mid = model.run_blocks(x, mask, stop=1)
        torch.testing.assert_close(mid, trace.cache["blocks.1.hook_resid_pre"], atol=0, rtol=0)
        logits = model.logits_from(model.run_blocks(mid, mask, start=1))
    torch.testing.assert_close(logits, trace.logits, atol=0, rtol=0)


def test_hook_names_follow_each_blocks_own_parts():
    """Names come from the module tree: GPT-NeoX has no stream between attention and the MLP;
    Gemma 2 has its norms after each part; Qwen3 its per-head q/k norms, after q and k."""
    names = {f: [n[len("blocks.0."):] for n in tiny_decoders.loaded(f)[0].hook_names
                 if n.startswith("blocks.0.")] for f in ("neox", "gemma2", "qwen3")}
    assert "hook_resid_mid" not in names["neox"] and "hook_resid_mid" in names["gemma2"]
    assert {"ln1_post.hook_normalized", "ln2_post.hook_normalized"} <= set(names["gemma2"])
    qwen = names["qwen3"]
    assert qwen.index("attn.hook_k") < qwen.index("attn.q_norm.hook_normalized") < \
        qwen.index("attn.hook_rot_q")
