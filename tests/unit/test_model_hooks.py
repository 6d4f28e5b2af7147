"""Hook points: the pinned list of names for each family, and the `hooks(...)` context manager
(replacing a tensor, cleaning up after an exception, isolation between threads, and never
mutating the shared model)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from torch.testing import assert_close

from model.hooks import _ACTIVE, caching_hook, hooks

ONE = "The cat sat on the mat."
OTHER = "Queries meet keys; the softmax turns scores into weights."

# ------------------------------------------------------------------- the pinned name lists
# Written out by hand: if a hook is added, renamed or lost, these lists must be edited too.
BERT_BLOCK = [
    "ln1.hook_normalized",
    "attn.hook_q", "attn.hook_k", "attn.hook_v",
    "attn.hook_qk", "attn.hook_scores", "attn.hook_pattern", "attn.hook_z",
    "mlp.hook_pre", "mlp.hook_post",
    "ln2.hook_normalized",
    "hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post",
]
GPT2_BLOCK = BERT_BLOCK  # the same sub-modules; only their order in the forward pass differs
LLAMA_BLOCK = [
    "ln1.hook_normalized",
    "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_rot_q", "attn.hook_rot_k",
    "attn.hook_qk", "attn.hook_scores", "attn.hook_pattern", "attn.hook_z",
    "mlp.hook_pre", "mlp.hook_pre_linear", "mlp.hook_post",
    "ln2.hook_normalized",
    "hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post",
]


def _blocks(suffixes: list[str], n_layers: int = 2) -> list[str]:
    return [f"blocks.{i}.{s}" for i in range(n_layers) for s in suffixes]


EXPECTED_NAMES = {
    "bert": ["embed.ln.hook_normalized", "embed.hook_tok", "embed.hook_type", "embed.hook_pos",
             "embed.hook_sum", *_blocks(BERT_BLOCK), "pooler.hook_out"],
    "roberta": ["embed.ln.hook_normalized", "embed.hook_tok", "embed.hook_type",
                "embed.hook_pos", "embed.hook_sum", *_blocks(BERT_BLOCK), "pooler.hook_out"],
    # GPT-2 has no segment embeddings, so no embed.hook_type.
    "gpt2": ["embed.hook_tok", "embed.hook_pos", "embed.hook_sum", *_blocks(GPT2_BLOCK),
             "ln_final.hook_normalized", "hook_logits"],
    "llama": ["embed.hook_tok", *_blocks(LLAMA_BLOCK), "ln_final.hook_normalized",
              "hook_logits"],
}


@pytest.mark.parametrize("family", sorted(EXPECTED_NAMES))
def test_hook_names_are_pinned(tiny_models_loaded, family):
    assert list(tiny_models_loaded[family].hook_names) == EXPECTED_NAMES[family]


@pytest.mark.parametrize("family", sorted(EXPECTED_NAMES))
def test_every_hook_point_fires_exactly_once_per_run(tiny_models_loaded, family):
    lm = tiny_models_loaded[family]
    calls: dict[str, int] = {}

    def count(x, name):
        calls[name] = calls.get(name, 0) + 1

    with hooks(lm.hook_names, [(lambda name: True, count)]):
        trace = lm.run(ONE)
    assert calls == {name: 1 for name in EXPECTED_NAMES[family]}
    assert set(trace.cache) == set(EXPECTED_NAMES[family])


# --------------------------------------------------------------------- replacing a tensor
def zero_head(head: int):
    def edit(x: torch.Tensor, name: str) -> torch.Tensor:
        x = x.clone()  # [batch, head, q_pos, k_pos] or [batch, head, q_pos, d_head]
        x[:, head] = 0
        return x
    return edit


@pytest.mark.parametrize("hook", ["attn.hook_pattern", "attn.hook_z"])
def test_zeroing_a_head_changes_the_run_inside_the_block_only(tiny_models_loaded, hook):
    lm = tiny_models_loaded["bert"]
    head = 1
    before = lm.run(ONE)
    with hooks(lm.hook_names, [(f"blocks.0.{hook}", zero_head(head))]):
        inside = lm.run(ONE)  # the run's own caching hooks run after ours and see the edit
    after = lm.run(ONE)

    # Inside: head 1 of block 0 contributes nothing, and nothing else in that layer changed.
    assert torch.count_nonzero(inside.cache["blocks.0.attn.hook_z"][:, head]) == 0
    if hook == "attn.hook_z":
        assert torch.equal(inside.cache["blocks.0.attn.hook_pattern"],
                           before.cache["blocks.0.attn.hook_pattern"])
    z_head = before.cache["blocks.0.attn.hook_z"][0, head]  # [q_pos, d_head]
    contribution = z_head @ lm.model.blocks[0].attn.W_O[head]  # [q_pos, d_model]
    # 1e-5: the same sum with one term removed; only float32 summation order differs.
    assert_close(inside.cache["blocks.0.hook_attn_out"][0],
                 before.cache["blocks.0.hook_attn_out"][0] - contribution, atol=1e-5, rtol=1e-5)
    assert torch.equal(inside.cache["blocks.0.hook_resid_pre"],
                       before.cache["blocks.0.hook_resid_pre"])  # upstream of the edit
    assert (inside.final - before.final).abs().max() > 1e-3  # downstream: the output moved

    # After the block: bit-for-bit the original run again.
    assert torch.equal(after.final, before.final)
    assert all(torch.equal(after.cache[name], before.cache[name]) for name in before.cache)


def test_hooks_are_removed_when_the_block_raises(tiny_models_loaded):
    lm = tiny_models_loaded["bert"]
    before = lm.run(ONE)
    with pytest.raises(RuntimeError, match="boom"):
        with hooks(lm.hook_names, [("blocks.0.attn.hook_pattern", zero_head(0))]):
            assert _ACTIVE.get() is not None
            raise RuntimeError("boom")
    assert _ACTIVE.get() is None
    assert torch.equal(lm.run(ONE).final, before.final)


def test_hooks_are_removed_when_a_hook_itself_raises(tiny_models_loaded):
    lm = tiny_models_loaded["gpt2"]
    before = lm.run(ONE)

    def explode(x, name):
        raise RuntimeError(f"boom in {name}")

    with pytest.raises(RuntimeError, match="boom in blocks.1.hook_resid_pre"):
        with hooks(lm.hook_names, [("blocks.1.hook_resid_pre", explode)]):
            lm.run(ONE)
    assert _ACTIVE.get() is None
    assert torch.equal(lm.run(ONE).logits, before.logits)


def test_unknown_hook_name_is_refused_and_predicates_select_by_name(tiny_models_loaded):
    lm = tiny_models_loaded["llama"]
    with pytest.raises(KeyError, match="blocks.9.attn.hook_pattern"):
        with hooks(lm.hook_names, [("blocks.9.attn.hook_pattern", zero_head(0))]):
            pass
    seen = []
    with hooks(lm.hook_names, [(lambda n: n.endswith("hook_rot_k"), lambda x, n: seen.append(n))]):
        lm.run(ONE)
    assert seen == ["blocks.0.attn.hook_rot_k", "blocks.1.attn.hook_rot_k"]


# ------------------------------------------------------------------ threads and sharing
def test_two_threads_each_capture_only_their_own_activations(tiny_models_loaded):
    lm = tiny_models_loaded["bert"]
    texts = [ONE, OTHER]
    alone = [lm.run(text) for text in texts]  # the reference, one run at a time
    assert alone[0].n_tokens != alone[1].n_tokens
    both_inside = threading.Barrier(2, timeout=20)

    def work(text: str) -> tuple[dict, object]:
        mine: dict[str, torch.Tensor] = {}

        def rendezvous(x, name):
            both_inside.wait()  # neither forward pass goes on until both have started

        with hooks(lm.hook_names, [("blocks.0.hook_resid_pre", rendezvous),
                                   (lambda n: n.endswith("hook_pattern"), caching_hook(mine))]):
            trace = lm.run(text)
        return mine, trace

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(work, texts))
    for (mine, trace), reference in zip(results, alone):
        assert sorted(mine) == ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"]
        for name, pattern in mine.items():
            assert torch.equal(pattern, reference.cache[name])
        assert torch.equal(trace.final, reference.final)


def test_a_run_with_hooks_leaves_the_shared_model_untouched(tiny_models_loaded):
    lm = tiny_models_loaded["llama"]
    model = lm.model
    state = {k: v.clone() for k, v in model.state_dict().items()}
    attached_during_run = []

    def look(x, name):  # called mid-forward: is anything attached to the modules right now?
        attached_during_run.append(any(
            m._forward_hooks or m._forward_pre_hooks for m in model.modules()))
        return x * 1.5

    with hooks(lm.hook_names, [("blocks.0.hook_resid_mid", look)]):
        lm.run([ONE, OTHER])
    lm.run(ONE, keep=lambda n: "pattern" in n)

    assert attached_during_run == [False]
    after = model.state_dict()
    assert after.keys() == state.keys()
    assert all(torch.equal(after[k], state[k]) for k in state)
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks
        assert not module._backward_hooks
    assert not torch.nn.modules.module._global_forward_hooks
    assert not model.training


# runner.lazy_recipes: what a plain run recomputes on first read instead of keeping. Every
# stack: q, k, v, q·k, the scores, z, attention's output (cross-attention's q and output),
# the norms inside the blocks, the MLP's pre-activations, activation and output. Pre-LN
# stacks (GPT-2, Llama, the T5 decoder) also the residual sums between the parts; in a
# post-LN block (BERT, BART) those are the norms' outputs (the same tensors), and the last
# norm's output is the block's, kept.
RECOMPUTED = ("attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_qk", "attn.hook_scores",
              "attn.hook_z", "hook_attn_out", "cross_attn.hook_q", "hook_cross_out",
              "mlp.hook_pre", "mlp.hook_pre_linear", "mlp.hook_post", "hook_mlp_out",
              "ln1.hook_normalized", "ln_cross.hook_normalized", "ln1_post.hook_normalized",
              "ln2_post.hook_normalized", "hook_resid_mid", "hook_resid_cross")
PRE_LN = ("ln2.hook_normalized",)  # post-LN: the block's output
KEPT = ("cross_attn.hook_k", "cross_attn.hook_v")  # they read the encoder's output


def _assert_recomputed_entries_equal_the_forward_pass(lm, texts, pre_ln: bool) -> None:
    # Inside a hooks() block every tensor is stored as the forward pass produced it; a plain
    # run recomputes the entries above on first read. Every entry must be bit-identical,
    # also when the patterns were first stacked into trace.attentions (z then reads a view).
    plain = lm.run(texts)
    plain.attentions  # noqa: B018
    lazy = set(getattr(plain.cache, "_derived", ()))
    seen: dict[str, torch.Tensor] = {}
    with hooks(lm.hook_names, [(lambda n: True, caching_hook(seen))]):
        stored = lm.run(texts)
    expected = RECOMPUTED + (PRE_LN if pre_ln else ())
    names = [n for n in lm.hook_names if n.startswith(("blocks.", "decoder.blocks."))
             and n.endswith(expected) and not n.endswith(KEPT)]
    assert names and all(n in plain.cache for n in names)
    assert lazy == set(names), "each of these is recomputed, not kept, in a plain run"
    assert sorted(plain.cache) == sorted(stored.cache) == sorted(lm.hook_names)
    for name in reversed(lm.hook_names):  # the last layer first: a chain of recipes
        assert torch.equal(plain.cache[name], seen[name]), name
        assert torch.equal(plain.cache[name], stored.cache[name]), name
    with pytest.raises(KeyError):
        plain.cache["blocks.0.attn.hook_nothing"]


def test_a_recomputed_entry_read_inside_an_editing_hook_block_is_the_runs_own(
        tiny_models_loaded):
    # recomputing passes through no hook point, so a hook active while reading changes nothing
    lm = tiny_models_loaded["gpt2"]
    plain, again = lm.run(ONE), lm.run(ONE)
    names = [n for n in lm.hook_names if n in plain.cache._derived]
    with hooks(lm.hook_names, [(lambda n: True, lambda x, n: x * 2)]):
        inside = {n: plain.cache[n] for n in reversed(names)}
    assert "blocks.1.hook_mlp_out" in inside and "blocks.0.hook_resid_mid" in inside
    for name in names:
        assert torch.equal(inside[name], again.cache[name]), name


@pytest.mark.parametrize("family", ["bert", "gpt2", "llama"])
def test_recomputed_entries_of_a_trace_equal_the_ones_the_forward_pass_saw(
        tiny_models_loaded, family):
    _assert_recomputed_entries_equal_the_forward_pass(tiny_models_loaded[family], [ONE, OTHER],
                                                      pre_ln=family != "bert")


@pytest.mark.parametrize("family", ["bart", "t5_gated"])
def test_recomputed_entries_of_an_encoder_decoder_trace(family):
    # both stacks and the cross-attention; T5's scores carry its relative position bias
    from tiny_seq2seq import loaded

    lm = loaded(family)[0]
    _assert_recomputed_entries_equal_the_forward_pass(lm, [ONE, OTHER], pre_ln=family != "bart")
    assert any(n.startswith("decoder.") and "cross_attn" in n
               for n in lm.run(ONE).cache._derived)


@pytest.mark.parametrize("family", ["mistral", "gemma2", "qwen3", "neox"])
def test_recomputed_entries_with_grouped_heads_windows_caps_and_qk_norms(family):
    # Mistral: grouped-query attention and a sliding window; Gemma 2: soft-capped scores and a
    # gated MLP and a norm after each part; Qwen3: q and k normalised per head before the
    # rotation; GPT-NeoX: attention and the MLP side by side (no stream between them)
    from tiny_decoders import loaded

    _assert_recomputed_entries_equal_the_forward_pass(loaded(family)[0], [ONE, OTHER], pre_ln=True)


def test_keeping_only_scores_still_works(tiny_models_loaded):
    lm = tiny_models_loaded["bert"]
    only = lm.run(ONE, keep=lambda n: n.endswith("hook_scores"))
    full = lm.run(ONE)
    assert sorted(only.cache) == sorted(n for n in lm.hook_names if n.endswith("hook_scores"))
    for name in only.cache:
        assert torch.equal(only.cache[name], full.cache[name])


def test_stacking_attentions_does_not_keep_a_second_copy(tiny_models_loaded):
    lm = tiny_models_loaded["bert"]
    trace = lm.run([ONE, OTHER])
    name = "blocks.1.attn.hook_pattern"
    before = trace.cache[name].clone()
    size_before = trace.nbytes
    stacked = trace.attentions  # [batch, layer, head, q, k]
    assert torch.equal(stacked[:, 1], before)
    assert torch.equal(trace.cache[name], before)
    patterns = sum(trace.cache[n].numel() * 4 for n in trace.layer_names("attn.hook_pattern"))
    # the stack replaced the per-layer tensors: the total grew by at most one stack, minus
    # the per-layer copies that were freed (they are views now)
    assert trace.cache[name].untyped_storage().data_ptr() == stacked.untyped_storage().data_ptr()
    assert trace.nbytes == size_before  # same bytes: one copy of the patterns either way
    assert patterns > 0


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_the_recipes_kept_per_model_do_not_keep_an_unloaded_model_alive(tiny_dirs, family):
    # runner.module_recipes remembers each model's recipes under a weak key; the recipes hold
    # its sub-modules only, so a model nobody uses any more is freed with its entry
    import gc
    import weakref

    from model.loading import load_model
    from model.runner import _RECIPES

    lm = load_model(str(tiny_dirs[family]), device="cpu")
    trace = lm.run(ONE)
    assert lm.model in _RECIPES and trace.cache["blocks.1.hook_mlp_out"].shape[-1] > 0
    gone = weakref.ref(lm.model)
    del lm, trace
    gc.collect()
    assert gone() is None
