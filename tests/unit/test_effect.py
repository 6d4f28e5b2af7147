"""Token importance (analysis/effect.py, gradients.py, effect_target.py): every method against
an independent computation, the bounds, and a shared model left untouched by two threads."""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from analysis.ablation import Inputs
from analysis.effect import (
    MAX_OCCLUSION_TOKENS, METHODS, attention_norms, average_ranks, layer_attention_norm,
    occlusion, spearman, token_importance,
)
from analysis.effect_target import make_target, special_token_id
from analysis.gradients import (
    MAX_GRADIENT_TOKENS, MAX_IG_BATCH_TOKENS, MAX_IG_STEPS, gradient_x_input,
    integrated_gradients,
)
from analysis.rollout import attention_rollout
from model.hooks import hooks
from model.runner import LoadedModel

TEXT = "The cat sat on the mat."
SECOND = "A dog chased the ball."


def _own_target(loaded, trace_final, logits, target, mask=None) -> float:
    """The target read from the model's own outputs (not from analysis/effect_target.py)."""
    if target.kind == "next_token":
        return float(F.log_softmax(logits[0, target.position].double(), -1)[target.token_id])
    final = trace_final[0].double()  # [pos, d_model]
    vec = final[0] if target.pooling == "cls" else final.mean(0)
    if target.kind == "norm":
        return float(vec.norm())
    return float(F.cosine_similarity(vec, target.other.double(), dim=0))


def _run_with_tok(loaded, inputs: Inputs, tok: torch.Tensor | None):
    """The model's own forward (LoadedModel.run_ids), token embeddings replaced by `tok`."""
    replace = [] if tok is None else [("embed.hook_tok", lambda x, name: tok.float())]
    with hooks(loaded.hook_names, replace):
        trace = loaded.run_ids(inputs.input_ids, inputs.attention_mask, inputs.token_type_ids,
                               keep=lambda n: False)
    return trace.final, trace.logits


@pytest.fixture(scope="module")
def gpt2(tiny_models_loaded):
    return tiny_models_loaded["gpt2"]


# ------------------------------------------------------------------- integrated gradients
@pytest.mark.parametrize("case", ["minilm-norm-zero", "minilm-cosine-mask", "gpt2-zero",
                                  "gpt2-pad"])
def test_integrated_gradients_add_up_to_the_change_in_the_target(case, minilm, gpt2):
    name, *rest = case.split("-")
    loaded = minilm if name == "minilm" else gpt2
    inputs = Inputs.encode(loaded, TEXT)
    if name == "minilm":
        target = make_target(loaded, inputs, second=SECOND if rest[0] == "cosine" else None)
    else:
        target = make_target(loaded, inputs, position=3)  # the real next token, "on"
    baseline = rest[-1]
    result = integrated_gradients(loaded, target, inputs, baseline, steps=64)

    # target(x) and target(baseline) from the model's own full forward, on every token
    final, logits = _run_with_tok(loaded, inputs, None)
    value = _own_target(loaded, final, logits, target)
    emb = loaded.model.embed.W_E.weight.detach()  # [vocab, d_model]
    n_pos = inputs.input_ids.shape[1]
    base = (torch.zeros(1, n_pos, emb.shape[1]) if baseline == "zero"
            else emb[special_token_id(loaded, baseline)].expand(1, n_pos, -1))
    final_b, logits_b = _run_with_tok(loaded, inputs, base)
    base_value = _own_target(loaded, final_b, logits_b, target)

    change = value - base_value
    assert abs(change) > 0.05  # a real change to explain
    assert result.value == pytest.approx(value, abs=1e-4)
    assert result.baseline_value == pytest.approx(base_value, abs=1e-4)
    assert abs(result.attributions.sum() - change) <= 0.01 * abs(change)
    assert abs(result.gap) <= 0.01 * abs(change)
    if target.kind == "next_token":  # later tokens cannot move the prediction
        assert np.all(result.attributions[target.position + 1:] == 0)
        assert np.abs(result.attributions[: target.position + 1]).max() > 1e-3


# --------------------------------------------------------------------- gradient × input
def _float64_copy(loaded) -> LoadedModel:
    """A private double-precision copy (the shared model is float32 and stays as it is)."""
    return LoadedModel(loaded.name, copy.deepcopy(loaded.model).double(), loaded.tokenizer,
                       torch.device("cpu"))


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_gradient_x_input_matches_central_differences(tiny_models_loaded, family):
    loaded = _float64_copy(tiny_models_loaded[family])
    inputs = Inputs.encode(loaded, TEXT)
    target = make_target(loaded, inputs, position=4 if family == "gpt2" else None)
    ours = gradient_x_input(loaded, target, inputs)

    model = loaded.model
    x = model.embed.W_E.weight.detach()[inputs.input_ids[0]][None]  # [1, pos, d_model]

    def f(tok: torch.Tensor) -> float:  # the model's own forward, token embeddings = tok
        with torch.no_grad(), hooks(model.hook_names, [("embed.hook_tok", lambda t, n: tok)]):
            out = model(inputs.input_ids, inputs.attention_mask, inputs.token_type_ids)
        return _own_target(loaded, out.final, out.logits, target)

    # d/dε target(x with x_p scaled by 1 + ε) at ε = 0 is exactly ∂target/∂x_p · x_p.
    eps = 1e-4
    numeric = []
    for p in range(x.shape[1]):
        up, down = x.clone(), x.clone()
        up[0, p] *= 1 + eps
        down[0, p] *= 1 - eps
        numeric.append((f(up) - f(down)) / (2 * eps))
    # float64: truncation error ~eps² relative, rounding ~1e-16 / eps
    np.testing.assert_allclose(ours, numeric, rtol=1e-6, atol=1e-9)
    assert np.abs(ours).max() > 1e-3


# ----------------------------------------------------------------------- attention norm
@pytest.mark.parametrize("family", ["llama", "bert"])  # llama: 4 query heads, 2 k/v heads
def test_attention_norm_from_the_cached_values(tiny_models_loaded, family):
    loaded = tiny_models_loaded[family]
    trace = loaded.run(TEXT)
    cfg = loaded.cfg
    for layer in range(cfg.n_layers):
        v = trace.cache[f"blocks.{layer}.attn.hook_v"][0].double()  # [kv_head, pos, d_head]
        alpha = trace.cache[f"blocks.{layer}.attn.hook_pattern"][0].double()  # [head, q, k]
        w_o = loaded.model.blocks[layer].attn.W_O.detach().double()  # [head, d_head, d_model]
        groups = cfg.n_heads // cfg.n_kv_heads
        # every weighted, transformed value vector in full: [head, q, k, d_model]
        full = torch.stack([alpha[h][:, :, None] * (v[h // groups] @ w_o[h])[None]
                            for h in range(cfg.n_heads)])
        np.testing.assert_allclose(attention_norms(loaded, trace, layer),
                                   full.norm(dim=-1).numpy(), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(layer_attention_norm(loaded, trace, layer),
                                   full.sum(0).norm(dim=-1).numpy(), rtol=1e-6, atol=1e-9)


# --------------------------------------------------------------------------- occlusion
@pytest.mark.parametrize("case", ["gpt2-remove", "gpt2-pad", "minilm-remove", "bert-mask"])
def test_occlusion_equals_a_separate_run_per_token(case, tiny_models_loaded, minilm):
    name, mode = case.split("-")
    loaded = minilm if name == "minilm" else tiny_models_loaded[name]
    inputs = Inputs.encode(loaded, TEXT)
    position = 4 if name == "gpt2" else None
    target = make_target(loaded, inputs, position=position,
                         second=SECOND if name == "bert" else None)
    ours = occlusion(loaded, target, inputs, mode, chunk=3)

    ids, types = inputs.input_ids[0], inputs.token_type_ids[0]
    value = _own_target(loaded, *_run_with_tok(loaded, inputs, None), target)
    n_pos = ids.shape[0]
    seen = n_pos if position is None else position + 1
    for j in range(n_pos):
        if j >= seen:
            assert ours[j] == 0  # after a decoder's position: no effect, not run
            continue
        if mode == "remove":
            keep = [i for i in range(n_pos) if i != j]
            other = Inputs(ids[keep][None], torch.ones(1, n_pos - 1, dtype=torch.long),
                           types[keep][None])
            moved = target if position is None else target.at(position - 1)
        else:
            changed = ids.clone()
            changed[j] = special_token_id(loaded, mode)
            other = Inputs(changed[None], inputs.attention_mask, inputs.token_type_ids)
            moved = target
        expected = value - _own_target(loaded, *_run_with_tok(loaded, other, None), moved)
        assert ours[j] == pytest.approx(expected, abs=2e-5), j  # float32, batch vs alone
    assert np.abs(ours[:seen]).max() > 1e-3


# ---------------------------------------------------------------------------- Spearman
def test_spearman_and_ranks_match_scipy():
    rng = np.random.default_rng(0)
    for n in (2, 3, 7, 40):
        for ties in (False, True):
            a = rng.integers(0, 4, n).astype(float) if ties else rng.normal(size=n)
            b = rng.integers(0, 4, n).astype(float) if ties else a + rng.normal(size=n)
            np.testing.assert_allclose(average_ranks(a), stats.rankdata(a))
            expected = stats.spearmanr(a, b).statistic
            if np.isnan(expected):
                assert np.isnan(spearman(a, b))
            else:
                assert spearman(a, b) == pytest.approx(expected, abs=1e-12)
    a, b = rng.normal(size=12), rng.normal(size=12)
    a[3], b[7] = np.nan, np.inf  # left out, as pairs
    keep = np.isfinite(a) & np.isfinite(b)
    assert spearman(a, b) == pytest.approx(stats.spearmanr(a[keep], b[keep]).statistic)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="one value per token"):
        spearman([1, 2], [1, 2, 3])


# -------------------------------------------------------------------------- everything
def test_token_importance_on_a_decoder(gpt2):
    inputs = Inputs.encode(gpt2, TEXT)
    target = make_target(gpt2, inputs, position=5)
    imp = token_importance(gpt2, inputs, target, layer=1, head=2, steps=16)
    trace = gpt2.run(TEXT)
    assert list(imp.scores) == list(METHODS)
    assert imp.visible.tolist() == [i <= 5 for i in range(len(imp.tokens))]
    np.testing.assert_allclose(imp.scores["attention"], trace.attention(1, 2)[5], atol=1e-7)
    np.testing.assert_allclose(imp.scores["rollout"],
                               attention_rollout(trace.attentions)[-1][5], atol=1e-7)
    np.testing.assert_allclose(imp.scores["attention_norm"],
                               attention_norms(gpt2, trace, 1)[2][5], atol=1e-7)
    vis = imp.visible
    for name, values in imp.scores.items():  # sizes of the scores against raw attention
        assert imp.correlations[name] == pytest.approx(
            stats.spearmanr(np.abs(values[vis]), imp.scores["attention"][vis]).statistic)
    effect = np.abs(imp.scores["occlusion"][vis])
    for layer, head in [(0, 0), (1, 3)]:
        row = trace.attention(layer, head)[5].numpy()[vis]
        assert imp.head_correlations[layer, head] == pytest.approx(
            stats.spearmanr(row, effect).statistic)


def test_token_importance_on_minilm_reads_the_mean_of_the_rows(minilm):
    inputs = Inputs.encode(minilm, TEXT)
    target = make_target(minilm, inputs)
    imp = token_importance(minilm, inputs, target, layer=2, head=None, steps=8)
    attentions = minilm.run(TEXT).attentions  # [layer, head, q, k]
    np.testing.assert_allclose(imp.scores["attention"],
                               attentions[2].mean(0).mean(0).numpy(), atol=1e-6)
    assert imp.visible.all() and imp.head_correlations.shape == (6, 12)
    assert "sentence vector" in target.label


def test_targets_and_their_defaults(gpt2, minilm, tiny_models_loaded):
    inputs = Inputs.encode(gpt2, TEXT)
    logits = gpt2.run(TEXT).logits[0]  # [pos, vocab]
    last = make_target(gpt2, inputs)
    assert last.position == inputs.input_ids.shape[1] - 1
    assert last.token_id == int(logits[-1].argmax())  # the model's own first choice
    middle = make_target(gpt2, inputs, position=2)
    assert middle.token_id == int(inputs.input_ids[0, 3])  # the text's real next token
    assert "next token" in middle.label
    with pytest.raises(ValueError, match="between 0 and"):
        make_target(gpt2, inputs, position=99)
    with pytest.raises(ValueError, match="encoders"):
        make_target(gpt2, inputs, second=SECOND)
    m_inputs = Inputs.encode(minilm, TEXT)
    assert make_target(minilm, m_inputs, second=SECOND).kind == "cosine"
    assert make_target(minilm, m_inputs, second="  ").kind == "norm"
    bert = tiny_models_loaded["bert"]
    cls = make_target(bert, Inputs.encode(bert, TEXT), pooling="cls")
    imp = token_importance(bert, Inputs.encode(bert, TEXT), cls, layer=0, head=1, steps=4)
    np.testing.assert_allclose(imp.scores["attention"], bert.run(TEXT).attention(0, 1)[0],
                               atol=1e-7)  # the [CLS] row


def test_bounds_are_stated_never_cut(gpt2, minilm):
    target = make_target(minilm, Inputs.encode(minilm, TEXT))
    long = Inputs.encode(minilm, " ".join(["word"] * (MAX_OCCLUSION_TOKENS + 5)))
    with pytest.raises(ValueError, match=f"at most {MAX_OCCLUSION_TOKENS} tokens"):
        occlusion(minilm, target, long)
    huge = Inputs(torch.zeros(1, MAX_GRADIENT_TOKENS + 1, dtype=torch.long),
                  torch.ones(1, MAX_GRADIENT_TOKENS + 1, dtype=torch.long),
                  torch.zeros(1, MAX_GRADIENT_TOKENS + 1, dtype=torch.long))
    with pytest.raises(ValueError, match=f"at most {MAX_GRADIENT_TOKENS} tokens"):
        gradient_x_input(minilm, target, huge)
    short = Inputs.encode(minilm, TEXT)
    with pytest.raises(ValueError, match=f"1 to {MAX_IG_STEPS} steps"):
        integrated_gradients(minilm, target, short, steps=MAX_IG_STEPS + 1)
    n = long.input_ids.shape[1]
    with pytest.raises(ValueError, match=f"at most {MAX_IG_BATCH_TOKENS // n} steps"):
        integrated_gradients(minilm, target, long, steps=64)
    g_inputs = Inputs.encode(gpt2, TEXT)
    with pytest.raises(ValueError, match=r"no \[MASK\] token"):
        integrated_gradients(gpt2, make_target(gpt2, g_inputs), g_inputs, "mask", steps=4)
    with pytest.raises(ValueError, match="layer must be"):
        token_importance(gpt2, g_inputs, make_target(gpt2, g_inputs), layer=5)


# -------------------------------------------------------------- a shared model, two users
def _results(loaded, text: str, position: int) -> dict[str, np.ndarray]:
    inputs = Inputs.encode(loaded, text)
    imp = token_importance(loaded, inputs, make_target(loaded, inputs, position=position),
                           layer=1, head=0, steps=16)
    return dict(imp.scores, heads=imp.head_correlations)


def test_the_shared_model_is_untouched_and_two_threads_agree(gpt2, minilm):
    models = (gpt2, minilm)
    before = [{k: v.detach().clone() for k, v in m.model.state_dict().items()} for m in models]
    flags = [[p.requires_grad for p in m.model.parameters()] for m in models]
    jobs = [(TEXT, 4), ("A dog chased the ball across the park!", 6)]
    alone = [_results(gpt2, *job) for job in jobs]
    m_inputs = Inputs.encode(minilm, TEXT)
    m_target = make_target(minilm, m_inputs)
    gradient_x_input(minilm, m_target, m_inputs)
    integrated_gradients(minilm, m_target, m_inputs, "mask", steps=4)

    together: list = [None, None]
    barrier = threading.Barrier(2)

    def work(i: int) -> None:
        barrier.wait()
        together[i] = [_results(gpt2, *jobs[i]) for _ in range(3)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        for run in together[i]:
            for name, values in alone[i].items():
                np.testing.assert_allclose(run[name], values, rtol=1e-6, atol=1e-7,
                                           err_msg=name)
    assert not np.allclose(alone[0]["integrated_gradients"][:5],
                           alone[1]["integrated_gradients"][:5])
    for m, state, flag in zip(models, before, flags):
        after = m.model.state_dict()
        assert all(torch.equal(state[k], after[k]) for k in state)
        assert [p.requires_grad for p in m.model.parameters()] == flag
        assert all(p.grad is None for p in m.model.parameters())
