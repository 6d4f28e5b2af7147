"""Parity with Hugging Face transformers (eager attention) for every family, on tiny
random-weight checkpoints saved to disk and loaded through `load_model(path)` like a user's.

Three levels (STYLE.md): one sub-layer (block 0's attention on the same input), the whole
forward (every pattern, every hidden state, the final output), and, in test_model_minilm.py,
a pinned slice of the real MiniLM.

Tolerance, used throughout: atol = rtol = 1e-5. Our forward does the same float32 operations
as HF's eager path in the same order except for how heads are laid out in the matmuls, and
GPT-2's tanh-GELU, which HF writes out by hand while we call F.gelu(approximate="tanh");
measured differences are 0 for BERT, RoBERTa and Llama and below 2e-6 for GPT-2. 1e-5 leaves
room for another CPU's BLAS while still failing on any real mistake: swapping two heads' W_Q
moves the patterns by up to 0.95 (test_the_tolerance_catches_a_plausible_conversion_mistake).
"""

from __future__ import annotations


import pytest
import torch
from torch.testing import assert_close

import tiny_models
from decoder_parity import swapped_head_pattern
from model import load_model

TOL = dict(atol=1e-5, rtol=1e-5)  # see the module docstring
ENCODERS = {"bert", "roberta"}
FAMILIES = ["bert", "roberta", "gpt2", "llama", "llama_variant"]
ONE = "The cat sat on the mat."
TWO = ["I love cats!", "Attention lets every token look at every other token."]


@pytest.fixture(scope="module")
def dirs(tiny_dirs, tmp_path_factory):
    """The four session checkpoints plus a Llama that exercises the converter's other branches:
    head_dim != d_model / n_heads, q/k/v/o and MLP biases, tied embeddings, rope_theta 5e5."""
    variant = tiny_models.make_llama(
        tmp_path_factory.mktemp("variant") / "llama", head_dim=16, attention_bias=True,
        mlp_bias=True, tie_word_embeddings=True, rope_theta=500000.0,
    )
    return {**tiny_dirs, "llama_variant": variant}


@pytest.fixture(scope="module")
def pairs(dirs, tiny_models_loaded):
    """family -> (our LoadedModel, the HF model read from the same directory)."""
    from transformers import AutoModel, AutoModelForCausalLM

    out = {}
    for family, path in dirs.items():
        cls = AutoModel if family in ENCODERS else AutoModelForCausalLM
        hf = cls.from_pretrained(str(path), attn_implementation="eager").eval()
        ours = tiny_models_loaded.get(family) or load_model(str(path))
        out[family] = (ours, hf)
    return out


def hf_run(hf, family: str, trace):
    """HF's forward on exactly the ids, mask (and token types) our tokenizer produced, plus the
    residual stream right before the final norm, which HF's hidden_states do not include."""
    kwargs = dict(input_ids=trace.input_ids, attention_mask=trace.attention_mask)
    if family == "bert":
        kwargs["token_type_ids"] = trace.token_type_ids
    if family in ENCODERS:
        with torch.no_grad():
            return hf(**kwargs, output_attentions=True, output_hidden_states=True), None
    captured = {}
    final_norm = hf.transformer.ln_f if family == "gpt2" else hf.model.norm
    handle = final_norm.register_forward_pre_hook(  # HF's model is ours to hook in a test
        lambda module, args: captured.setdefault("pre_norm", args[0]))
    try:
        with torch.no_grad():
            out = hf(**kwargs, output_attentions=True, output_hidden_states=True)
    finally:
        handle.remove()
    return out, captured["pre_norm"]


def assert_forward_parity(family: str, trace, out, pre_norm) -> None:
    n_layers = trace.cfg.n_layers
    assert len(out.attentions) == n_layers and len(out.hidden_states) == n_layers + 1
    for layer in range(n_layers):  # every layer's pattern, every head, padding rows included
        assert_close(trace.cache[f"blocks.{layer}.attn.hook_pattern"], out.attentions[layer], **TOL)
    ours = [trace.cache["blocks.0.hook_resid_pre"]] + [
        trace.cache[f"blocks.{i}.hook_resid_post"] for i in range(n_layers)]
    if family in ENCODERS:  # post-LN: HF's hidden states are exactly the block outputs
        for layer, theirs in enumerate(out.hidden_states):
            assert_close(ours[layer], theirs, **TOL)
        assert_close(trace.final, out.last_hidden_state, **TOL)
        assert_close(trace.pooled, out.pooler_output, **TOL)
    else:  # pre-LN: HF's last hidden state is after the final norm (= our trace.final)
        for layer, theirs in enumerate(out.hidden_states[:-1]):
            assert_close(ours[layer], theirs, **TOL)
        assert_close(ours[-1], pre_norm, **TOL)
        assert_close(trace.final, out.hidden_states[-1], **TOL)
        assert_close(trace.logits, out.logits, **TOL)


# ------------------------------------------------------------------------ whole forward
@pytest.mark.parametrize("family", FAMILIES)
def test_single_text_matches_hf(pairs, family):
    ours, hf = pairs[family]
    trace = ours.run(ONE)
    out, pre_norm = hf_run(hf, family, trace)
    assert_forward_parity(family, trace, out, pre_norm)
    # The convenience views drop the batch dimension for a single text.
    assert_close(trace.attentions, torch.stack(out.attentions, 1)[0], **TOL)
    assert trace.attentions.shape == (2, trace.cfg.n_heads, trace.n_tokens, trace.n_tokens)


@pytest.mark.parametrize("family", FAMILIES)
def test_padded_batch_matches_hf_and_padding_keys_get_no_attention(pairs, family):
    ours, hf = pairs[family]
    trace = ours.run(TWO)
    mask = trace.attention_mask
    assert mask[0].sum() < mask[1].sum() and mask[0, -1] == 0, "the short text must be padded"
    out, pre_norm = hf_run(hf, family, trace)
    assert_forward_parity(family, trace, out, pre_norm)
    padding_keys = mask[0] == 0
    for layer in range(trace.cfg.n_layers):  # exactly zero, not merely small
        pattern = trace.cache[f"blocks.{layer}.attn.hook_pattern"]  # [batch, head, q_pos, k_pos]
        assert torch.count_nonzero(pattern[0][..., padding_keys]) == 0


def test_bert_sentence_pair_with_token_types_matches_hf(pairs):
    ours, hf = pairs["bert"]
    trace = ours.run("The cat sat on the mat.", pair="A dog chased the ball.")
    types = trace.token_type_ids[0]
    tokens = trace.tokens
    second = tokens.index("[SEP]") + 1  # sentence B starts after the first [SEP]
    assert types[:second].eq(0).all() and types[second:].eq(1).all()
    assert tokens[second:] == ["a", "dog", "chased", "the", "ball", ".", "[SEP]"]
    out, pre_norm = hf_run(hf, "bert", trace)
    assert_forward_parity("bert", trace, out, pre_norm)
    # The segment embedding really entered the sum: sentence B rows use W_type[1].
    type_rows = ours.model.embed.W_type.weight[types]  # [pos, d_model]
    assert_close(trace.cache["embed.hook_type"][0], type_rows, atol=0, rtol=0)


def test_roberta_positions_start_after_the_padding_index(pairs):
    ours, _ = pairs["roberta"]
    trace = ours.run(TWO)
    pad = ours.cfg.pad_token_id
    assert pad == 1 and ours.cfg.position_offset == 2
    w_pos = ours.model.embed.W_pos.weight  # [n_ctx + offset, d_model]
    for item in range(2):
        real = int(trace.attention_mask[item].sum())
        expected = torch.full((trace.n_tokens,), pad)
        expected[:real] = torch.arange(pad + 1, pad + 1 + real)  # 2, 3, ... ; padding keeps 1
        assert_close(trace.cache["embed.hook_pos"][item], w_pos[expected], atol=0, rtol=0)


def test_the_tolerance_catches_a_plausible_conversion_mistake(pairs):
    """Swapping two heads' W_Q (what a wrong reshape in convert.py would do) must fail the
    comparison: the tolerance is far tighter than the effect of a real mistake."""
    ours, hf = pairs["bert"]
    trace = ours.run(ONE)
    out, _ = hf_run(hf, "bert", trace)
    with pytest.raises(AssertionError):
        assert_close(swapped_head_pattern(ours, trace), out.attentions[0], **TOL)
    assert_close(trace.cache["blocks.0.attn.hook_pattern"], out.attentions[0], **TOL)


# ------------------------------------------------------------------------- one sub-layer
def hf_block0_attention(hf, family: str, x: torch.Tensor):
    """HF's own block-0 attention module called on `x` (its input: the block input for the
    post-LN encoders, the ln_1 / input_layernorm output for the pre-LN decoders).
    Returns (output after the output projection, pattern)."""
    n = x.shape[1]
    causal = torch.full((n, n), torch.finfo(x.dtype).min).triu(1)[None, None]  # [1, 1, q, k]
    with torch.no_grad():
        if family in ENCODERS:
            attention = hf.encoder.layer[0].attention
            context, pattern = attention.self(x)
            return attention.output.dense(context), pattern
        if family == "gpt2":
            out, pattern = hf.transformer.h[0].attn(x, attention_mask=causal)[:2]
            return out, pattern
        rotary = hf.model.rotary_emb(x, torch.arange(n)[None])
        return hf.model.layers[0].self_attn(x, position_embeddings=rotary, attention_mask=causal)


@pytest.mark.parametrize("family", FAMILIES)
def test_block0_attention_matches_hf_module_on_the_same_input(pairs, family):
    ours, hf = pairs[family]
    trace = ours.run(ONE)
    x = trace.cache["blocks.0.hook_resid_pre" if family in ENCODERS
                    else "blocks.0.ln1.hook_normalized"]  # [batch, pos, d_model]
    if family not in ENCODERS:  # the pre-attention norm (LayerNorm / RMSNorm) matches too
        norm = hf.transformer.h[0].ln_1 if family == "gpt2" else hf.model.layers[0].input_layernorm
        with torch.no_grad():
            assert_close(norm(trace.cache["blocks.0.hook_resid_pre"]), x, **TOL)
    theirs_out, theirs_pattern = hf_block0_attention(hf, family, x)
    assert_close(trace.cache["blocks.0.attn.hook_pattern"], theirs_pattern, **TOL)
    assert_close(trace.cache["blocks.0.hook_attn_out"], theirs_out, **TOL)


def test_llama_uses_grouped_query_attention(pairs):
    ours, hf = pairs["llama"]
    assert (ours.cfg.n_heads, ours.cfg.n_kv_heads) == (4, 2)
    assert hf.config.num_key_value_heads == 2
    trace = ours.run(ONE)
    assert trace.cache["blocks.0.attn.hook_k"].shape[1] == 2  # [batch, kv_head, pos, d_head]
    assert trace.cache["blocks.0.attn.hook_q"].shape[1] == 4  # [batch, head, pos, d_head]
