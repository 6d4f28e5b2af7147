"""Parity with Hugging Face eager for the encoder-decoders: BART (post-LN, learned positions
from 2, a norm after the embeddings, a logits bias), Marian (sinusoidal positions in halves,
swish, scaled embeddings) and T5 (RMSNorm, relative position bias, unscaled scores; relu with a
tied, scaled head, and v1.1's gated-GELU with an untied head). Checkpoints: tests/tiny_seq2seq.py.

What the app shows is compared: the trace of `run` (greedy decoding, then the decoder once more
on its own output), against HF's forward on the same source ids, mask and decoder ids: every
encoder self-attention, decoder self-attention and cross-attention pattern, every hidden state
of both stacks, the encoder's output and the logits.

Tolerance: atol = rtol = 1e-4 (issue 28's bar). The forward does HF's float32 operations in
HF's order; measured differences are 0 for BART, Marian and T5 (relu), and for the gated T5
2e-6 on the patterns and 5e-6 on the logits. A swapped pair of heads (the negative controls)
moves the patterns by more than 0.01, two orders of magnitude above it.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.testing import assert_close

import tiny_seq2seq
from model.hooks import caching_hook, hooks

TOL = dict(atol=1e-4, rtol=1e-4)
ONE = "Attention lets every token look at every other token."
TWO = ["I love cats!", "Attention lets every token look at every other token."]
FAMILIES = tiny_seq2seq.FAMILIES


def hf_forward(hf, trace):
    with torch.no_grad():
        return hf(input_ids=trace.input_ids, attention_mask=trace.attention_mask,
                  decoder_input_ids=trace.decoder_ids, output_attentions=True,
                  output_hidden_states=True)


def assert_parity(trace, out) -> None:
    cache, enc, dec = trace.cache, trace.cfg, trace.dec_cfg
    assert len(out.encoder_attentions) == enc.n_layers
    assert len(out.cross_attentions) == len(out.decoder_attentions) == dec.n_layers
    for i in range(enc.n_layers):
        assert_close(cache[f"blocks.{i}.attn.hook_pattern"], out.encoder_attentions[i], **TOL)
        assert_close(cache[f"blocks.{i}.hook_resid_pre"], out.encoder_hidden_states[i], **TOL)
    # HF's last encoder state is the encoder's output: after T5's final norm, BART's last block
    assert_close(trace.final, out.encoder_last_hidden_state, **TOL)
    assert_close(out.encoder_hidden_states[-1], out.encoder_last_hidden_state)
    for i in range(dec.n_layers):
        p = f"decoder.blocks.{i}."
        assert_close(cache[p + "attn.hook_pattern"], out.decoder_attentions[i], **TOL)
        assert_close(cache[p + "cross_attn.hook_pattern"], out.cross_attentions[i], **TOL)
        assert_close(cache[p + "hook_resid_pre"], out.decoder_hidden_states[i], **TOL)
    assert_close(trace.decoder_logits, out.logits, **TOL)


@pytest.mark.parametrize("family", FAMILIES)
def test_single_text_matches_hf(family):
    ours, hf = tiny_seq2seq.loaded(family)
    trace = ours.run(ONE)
    assert trace.kind == "encoder_decoder" and trace.decoder_ids.shape[1] >= 2
    assert_parity(trace, hf_forward(hf, trace))


@pytest.mark.parametrize("family", FAMILIES)
def test_padded_batch_matches_hf(family):
    ours, hf = tiny_seq2seq.loaded(family)
    trace = ours.run(TWO)
    mask = trace.attention_mask
    assert mask[0].sum() < mask[1].sum() and mask[0, -1] == 0, "the short text must be padded"
    assert_parity(trace, hf_forward(hf, trace))
    # padding gets no attention from the decoder: every cross-attention row ignores it
    cross = trace.cross_attentions  # [batch, layer, head, out_pos, src_pos]
    assert float(cross[0, ..., mask[0] == 0].abs().max()) == 0.0


@pytest.mark.parametrize("family", FAMILIES)
def test_cross_attention_rows_read_the_source(family):
    """Each cross-attention row is a softmax over the source tokens the user typed."""
    ours, _ = tiny_seq2seq.loaded(family)
    trace = ours.run(ONE)
    cross = trace.cross_attentions  # [layer, head, out_pos, src_pos]
    assert cross.shape[-1] == len(trace.tokens)
    assert cross.shape[-2] == len(trace.decoder_tokens[0]) == len(trace.output_tokens[0])
    assert_close(cross.sum(-1), torch.ones(cross.shape[:-1]), atol=1e-5, rtol=0)


def _swap_heads(model, name: str):
    """A copy of the model with heads 0 and 1 of one weight swapped (the shared model is
    never touched)."""
    broken = copy.deepcopy(model)
    weight = broken.get_parameter(name)
    with torch.no_grad():
        if name.endswith("W_bias.weight"):  # [bucket, head]
            weight[:, [0, 1]] = weight[:, [1, 0]].clone()
        else:  # [head, d_model, d_head]
            weight[[0, 1]] = weight[[1, 0]].clone()
    return broken


SWAPS = [(f, "blocks.0.attn.W_Q", "blocks.0.attn.hook_pattern") for f in FAMILIES] + [
    (f, "decoder.blocks.1.cross_attn.W_K", "decoder.blocks.1.cross_attn.hook_pattern")
    for f in FAMILIES] + [
    ("t5", "rel_bias.W_bias.weight", "blocks.1.attn.hook_pattern"),
    ("t5_gated", "decoder.rel_bias.W_bias.weight", "decoder.blocks.2.attn.hook_pattern")]


@pytest.mark.parametrize("family,weight,hook", SWAPS)
def test_a_swapped_weight_fails(family, weight, hook):
    """Negative control: the same comparison against a copy with two heads of one weight (or
    two heads' columns of T5's bias table) swapped must fail, so the tests can see a mistake."""
    ours, hf = tiny_seq2seq.loaded(family)
    trace = ours.run(ONE)
    out = hf_forward(hf, trace)
    broken = _swap_heads(ours.model, weight)
    cache: dict[str, torch.Tensor] = {}
    with torch.no_grad(), hooks(broken.hook_names, [(hook, caching_hook(cache))]):
        broken(trace.input_ids, trace.attention_mask, decoder_input_ids=trace.decoder_ids)
    layer = int(hook.split("blocks.")[1].split(".")[0])
    theirs = (out.encoder_attentions if not hook.startswith("decoder") else
              out.cross_attentions if "cross" in hook else out.decoder_attentions)[layer]
    assert_close(trace.cache[hook], theirs, **TOL)  # the real model matches ...
    assert float((cache[hook] - theirs).abs().max()) > 0.01  # ... the broken copy does not
    with pytest.raises(AssertionError):
        assert_close(cache[hook], theirs, **TOL)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_generation_matches_hf_generate(family):
    """The tokens the app decodes are HF's greedy `generate`, step for step (a batch, with
    padding), until each row ends."""
    ours, hf = tiny_seq2seq.loaded(family)
    enc = ours.encode(TWO)
    spec = ours.model.spec
    n_new = 6
    ids = ours.model.greedy(enc.input_ids, enc.attention_mask, spec.start_id, spec.eos_id, n_new)
    with torch.no_grad():
        theirs = hf.generate(
            input_ids=enc.input_ids, attention_mask=enc.attention_mask, max_new_tokens=n_new,
            min_new_tokens=0, do_sample=False, num_beams=1, decoder_start_token_id=spec.start_id,
            eos_token_id=spec.eos_id, forced_bos_token_id=None, forced_eos_token_id=None,
            no_repeat_ngram_size=0, repetition_penalty=1.0, bad_words_ids=None,
            use_cache=False)  # HF's T5 cache is sized by num_layers, not num_decoder_layers
    assert ids.shape[1] >= 2
    for row in range(len(TWO)):
        mine, hfs = ids[row].tolist(), theirs[row].tolist()
        end = mine.index(spec.eos_id) + 1 if spec.eos_id in mine[1:] else len(mine)
        assert mine[:end] == hfs[:end], (family, row, mine, hfs)


def test_a_flan_t5_style_checkpoint_keeps_its_own_head(tmp_path):
    """T5 v1.1 and Flan-T5 on the hub: config.json written before transformers 5 says
    tie_word_embeddings false (so no scaling) and the checkpoint holds its own lm_head. HF keeps
    that head; so do we."""
    import json
    import shutil

    import transformers
    from safetensors.torch import load_file, save_file

    from model.loading import load_model

    directory = tmp_path / "flan"
    shutil.copytree(tiny_seq2seq.folder("t5_gated"), directory)
    state = load_file(directory / "model.safetensors")
    assert "lm_head.weight" not in state  # transformers 5 saved it tied
    state["lm_head.weight"] = torch.randn(state["shared.weight"].shape,
                                          generator=torch.Generator().manual_seed(3)) * 0.3
    save_file(state, directory / "model.safetensors")
    config = json.loads((directory / "config.json").read_text())
    config.pop("scale_decoder_outputs", None)
    config["tie_word_embeddings"] = False
    (directory / "config.json").write_text(json.dumps(config))
    ours = load_model(str(directory), device="cpu")
    hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(
        directory, attn_implementation="eager").eval()
    assert ours.model.spec.out_scale == 1.0
    trace = ours.run(TWO)
    assert_parity(trace, hf_forward(hf, trace))
