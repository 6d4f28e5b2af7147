"""The engine's one run with hooks (model/run.py): what it keeps is what the model computed,
a hook's edit reaches the output, a run from a start layer or without the head gives the
whole run's numbers, an encoder–decoder's encoder and decoder run on their own as inside the
whole model, and nothing stays attached to the shared model afterwards."""

from __future__ import annotations

import pytest
import torch

import tiny_seq2seq
from model.hook_names import hook_names
from model.hooks import hooks_active
from model.run import encode_source, run_with_hooks


def test_kept_tensors_are_the_traces_and_nothing_else(tiny_chars):
    ids = tiny_chars.encode("the cat sat").input_ids  # [1, pos]
    names = hook_names(tiny_chars.cfg)
    wanted = {names.resid(1, "pre"), names.attn(0, "pattern")}
    out, cache = run_with_hooks(tiny_chars, ids, keep=wanted)
    trace = tiny_chars.run("the cat sat")
    assert set(cache) == wanted
    for name in wanted:
        assert torch.equal(cache[name], trace.cache[name])
    assert torch.equal(out.logits, trace.logits)
    assert not out.logits.requires_grad and not hooks_active()


def test_a_hook_edit_reaches_the_output_and_is_gone_after(tiny_chars):
    ids = tiny_chars.encode("the cat sat").input_ids
    name = hook_names(tiny_chars.cfg).attn(0, "z")
    plain, _ = run_with_hooks(tiny_chars, ids)
    zeroed, cache = run_with_hooks(tiny_chars, ids, hooks=[(name, lambda z, _n: z * 0)],
                                   keep=[name])
    assert bool((cache[name] == 0).all())  # the cache holds the edited tensor
    assert not torch.allclose(plain.logits, zeroed.logits)
    again, _ = run_with_hooks(tiny_chars, ids)
    assert torch.equal(again.logits, plain.logits)


def test_a_run_from_a_start_layer_and_without_the_head_matches_the_whole_run(tiny_chars):
    ids = tiny_chars.encode("the cat sat on the mat").input_ids
    names = hook_names(tiny_chars.cfg)
    whole, cache = run_with_hooks(tiny_chars, ids, keep=[names.resid(1, "pre")])
    rest, _ = run_with_hooks(tiny_chars, resid=cache[names.resid(1, "pre")], start=1)
    assert torch.allclose(rest.logits, whole.logits, atol=1e-5)
    bare, _ = run_with_hooks(tiny_chars, ids, head=False)
    assert bare.logits is None and torch.allclose(bare.final, whole.final, atol=1e-6)


def test_gradients_reach_a_copy_only_when_asked(tiny_chars):
    ids = tiny_chars.encode("the cat").input_ids
    tok = hook_names(tiny_chars.cfg).embed("tok")
    _, cache = run_with_hooks(tiny_chars, ids, keep=[tok])
    mine = cache[tok].clone().requires_grad_(True)
    out, _ = run_with_hooks(tiny_chars, ids, hooks=[(tok, lambda x, _n: mine)], grad=True)
    (grad,) = torch.autograd.grad(out.logits[0, -1].sum(), mine)  # as analysis/gradients.py
    assert float(grad.abs().sum()) > 0
    assert all(p.grad is None for p in tiny_chars.model.parameters())
    quiet, _ = run_with_hooks(tiny_chars, ids, hooks=[(tok, lambda x, _n: mine)])
    assert not quiet.logits.requires_grad


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_an_encoder_decoders_stacks_run_alone_as_inside_the_whole_model(family):
    lm, _ = tiny_seq2seq.loaded(family)
    src = lm.encode("the cat sat on the mat").input_ids  # [1, src_pos]
    dec = lm.run("the cat sat on the mat").decoder_ids[:, :5]  # [1, out_pos]
    whole, cache = run_with_hooks(lm, src, decoder_ids=dec,
                                  keep=[hook_names(lm.cfg).resid(1, "pre")])
    memory, memory_mask = encode_source(lm, src)
    assert torch.equal(memory, whole.memory)
    logits, _ = run_with_hooks(lm, dec, stack="decoder", memory=memory, memory_mask=memory_mask)
    assert torch.allclose(logits, whole.decoder_logits, atol=1e-5)
    rest, _ = run_with_hooks(lm, resid=cache[hook_names(lm.cfg).resid(1, "pre")], start=1,
                             stack="encoder")
    assert torch.allclose(rest.final, memory, atol=1e-5)


def test_an_unknown_or_missing_stack_is_refused_in_words(tiny_chars):
    ids = tiny_chars.encode("a").input_ids
    with pytest.raises(ValueError, match="stack must be one of"):
        run_with_hooks(tiny_chars, ids, stack="cross")
    with pytest.raises(ValueError, match="this model has one stack"):
        run_with_hooks(tiny_chars, ids, stack="encoder")
    lm, _ = tiny_seq2seq.loaded("t5")
    with pytest.raises(ValueError, match="pass memory"):
        run_with_hooks(lm, lm.encode("a cat").input_ids, stack="decoder")
