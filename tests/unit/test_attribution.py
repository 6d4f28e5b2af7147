"""Direct logit attribution: the parts add up to the model's logit with the final norm's
scale frozen, and taking one head's output away (scale frozen) moves the logit by exactly
that head's part."""

from __future__ import annotations

import pytest
import torch

from analysis.attribution import attribute, attribute_ids
from model import load_model
from model.hooks import caching_hook, hooks

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def own():
    return {name: load_model(name) for name in ("tiny-chars", "tiny-induction")}


def _model(name, tiny_models_loaded, own):
    return own[name] if name in own else tiny_models_loaded[name]


def _frozen_logits(model, x: torch.Tensor, x_run: torch.Tensor) -> torch.Tensor:
    """The final norm with the scale of x_run, then the unembedding, written out by hand.
    x, x_run: [d_model] -> [vocab], float64."""
    norm, x, x_run = model.ln_final, x.double(), x_run.double()
    w = norm.weight.detach().double()
    if getattr(norm, "bias", None) is None:  # RMSNorm
        y = x * torch.rsqrt(x_run.pow(2).mean() + norm.eps) * w
    else:
        sigma = torch.sqrt(x_run.var(unbiased=False) + norm.eps)
        y = (x - x.mean()) / sigma * w + norm.bias.detach().double()
    return y @ model.unembed.weight.detach().double().T


@pytest.mark.parametrize("name", ["gpt2", "llama", "tiny-chars", "tiny-induction"])
def test_the_parts_add_up_to_the_logit(name, tiny_models_loaded, own):
    lm = _model(name, tiny_models_loaded, own)
    text = TEXT if name in ("gpt2", "llama") else "the query looks at abcdabcd"
    trace = lm.run(text)
    for position in (-1, 2):
        a = attribute(lm, text, position=position)
        logits = trace.logits[0, position]  # [vocab]
        assert a.target == int(logits.argmax())  # the default: the predicted token
        assert a.value == pytest.approx(float(logits[a.target]), abs=1e-6)
        # float64 sum of float32 activations against the float32 model: ~1e-6 observed
        assert abs(a.total() - a.value) < 1e-4
        assert abs(sum(v for _, v in a.components()) - a.value) < 1e-4
        assert a.heads.shape == (lm.cfg.n_layers, lm.cfg.n_heads)
        assert abs(a.per_layer().sum() + sum(a.embeddings.values()) + a.norm_bias
                   - a.value) < 1e-4
        other = int(logits.argsort()[0])  # the least likely token
        diff = attribute(lm, text, position=position, target=a.target, baseline=other)
        assert diff.value == pytest.approx(float(logits[a.target] - logits[other]), abs=1e-5)
        assert abs(diff.total() - diff.value) < 1e-4
        assert diff.value > 0
    assert ("position" in a.embeddings) == (lm.cfg.positions != "rotary")
    assert (a.mlps != 0).any() == (not lm.cfg.attn_only)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_removing_a_head_with_the_scale_frozen_moves_the_logit_by_its_part(
        name, tiny_models_loaded):
    lm = tiny_models_loaded[name]
    model, cfg = lm.model, lm.cfg
    trace = lm.run(TEXT)
    pos = trace.n_tokens - 1
    x_run = trace.cache[f"blocks.{cfg.n_layers - 1}.hook_resid_post"][0, pos]  # [d_model]
    clean = _frozen_logits(model, x_run, x_run)  # [vocab]
    torch.testing.assert_close(clean.float(), trace.logits[0, pos], atol=1e-4, rtol=0)
    a = attribute(lm, TEXT)
    for layer in range(cfg.n_layers):
        z = trace.cache[f"blocks.{layer}.attn.hook_z"][0, :, pos]  # [head, d_head]
        w_o = model.blocks[layer].attn.W_O.detach()  # [head, d_head, d_model]
        for head in range(cfg.n_heads):
            without = x_run - z[head] @ w_o[head]  # [d_model], the head's output taken away
            change = _frozen_logits(model, without, x_run)[a.target] - clean[a.target]
            assert float(change) == pytest.approx(-a.heads[layer, head], abs=1e-4)


def test_zeroing_a_last_layer_head_moves_the_logit_by_its_part(own):
    """tiny-induction is attention-only: a last-layer head reaches the logits only directly,
    so zeroing its z in a real run (hooks) is exactly the direct effect."""
    lm = own["tiny-induction"]
    model, text = lm.model, "k3bq9xw7mk3bq9xw7m"
    ids = lm.encode(text).input_ids  # [1, pos]
    last = f"blocks.{lm.cfg.n_layers - 1}.hook_resid_post"
    run = {}
    with torch.no_grad(), hooks(lm.hook_names, [(last, caching_hook(run))]):
        model(ids)
    x_run = run[last][0, -1]  # [d_model]
    a = attribute(lm, text)
    mismatch = []
    for layer in range(lm.cfg.n_layers):
        for head in range(lm.cfg.n_heads):
            def zero(z, name, head=head):
                z = z.clone()
                z[:, head] = 0
                return z
            cache = {}
            with torch.no_grad(), hooks(lm.hook_names, [(f"blocks.{layer}.attn.hook_z", zero),
                                                        (last, caching_hook(cache))]):
                model(ids)
            change = (_frozen_logits(model, cache[last][0, -1], x_run)
                      - _frozen_logits(model, x_run, x_run))[a.target]
            if layer == lm.cfg.n_layers - 1:
                assert float(change) == pytest.approx(-a.heads[layer, head], abs=1e-4)
            else:
                mismatch.append(abs(float(change) + a.heads[layer, head]))
    # a layer-0 head also acts through layer 1: its total effect is not its direct part
    assert max(mismatch) > 1e-2


def test_bad_requests_get_a_clear_message(tiny_models_loaded, own):
    with pytest.raises(ValueError, match="encoder"):
        attribute(tiny_models_loaded["bert"], TEXT)
    lm = own["tiny-chars"]
    with pytest.raises(ValueError, match="within the text's 3 tokens"):
        attribute(lm, "abc", position=3)
    with pytest.raises(ValueError, match="target token"):
        attribute(lm, "abc", target=lm.cfg.d_vocab)
    with pytest.raises(ValueError, match="must differ"):
        attribute(lm, "abc", target=1, baseline=1)
    a = attribute_ids(lm, [0, 1, 2], position=0, target=3)
    assert a.position == 0 and a.target == 3 and abs(a.total() - a.value) < 1e-4
