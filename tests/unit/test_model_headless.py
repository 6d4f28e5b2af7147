"""A decoder checkpoint saved without its language-model head (a bare GPT2Model / LlamaModel)
loads without the head: attention and hidden states are Hugging Face's, there are no logits,
and the logit lens says why it does not apply. A tied bare model keeps its head: the
unembedding is the token embedding, as Hugging Face's *ForCausalLM would build it."""

from __future__ import annotations

import json

import pytest
import torch
from torch.testing import assert_close

import tiny_models
from analysis.logit_lens import lens_logits
from model import load_model


def _bare(directory, family: str, tied: bool):
    """A tiny bare decoder (no lm_head) with random weights, saved like a user's folder."""
    from transformers import GPT2Config, GPT2Model, LlamaConfig, LlamaModel

    directory.mkdir(parents=True)
    if family == "gpt2":
        tok = tiny_models._bpe_tokenizer(["<|endoftext|>"], None)
        tiny_models._save_tokenizer(tok, directory, eos_token="<|endoftext|>",
                                    bos_token="<|endoftext|>")
        model = GPT2Model(GPT2Config(vocab_size=tok.get_vocab_size(), n_embd=32, n_layer=2,
                                     n_head=4, n_positions=40, tie_word_embeddings=tied))
    else:
        tok = tiny_models._bpe_tokenizer(["<s>", "</s>", "<unk>"], "<s> $A")
        tiny_models._save_tokenizer(tok, directory, bos_token="<s>", eos_token="</s>",
                                    unk_token="<unk>")
        model = LlamaModel(LlamaConfig(
            vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=56,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=64, tie_word_embeddings=tied))
    return tiny_models._save(model.eval(), directory)


def _hf(directory, family: str):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(directory), attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(str(directory))


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_bare_untied_decoder_loads_without_its_head(tmp_path, family):
    directory = _bare(tmp_path / "bare", family, tied=False)
    assert json.loads((directory / "config.json").read_text())["architectures"] in (
        ["LlamaModel"], ["GPT2Model"])
    lm = load_model(str(directory))
    assert lm.headless and lm.cfg.causal and not lm.cfg.has_lm_head
    assert lm.model.unembed is None and "hook_logits" not in lm.hook_names
    text = "The cat sat on the mat."
    trace = lm.run(text)
    assert trace.logits is None
    # what it does show is Hugging Face's: every attention pattern and the last hidden state
    hf, tok = _hf(directory, family)
    with torch.no_grad():
        out = hf(**tok(text, return_tensors="pt"), output_attentions=True)
    # float32 on the CPU, same op order up to the softmax: agreement to ~1e-6
    for layer, pattern in enumerate(out.attentions):
        assert_close(trace.attentions[layer], pattern[0], atol=1e-5, rtol=1e-4)
    assert_close(trace.final[0], out.last_hidden_state[0], atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="language-model head"):
        lens_logits(lm.model, trace.hidden_states)


def test_a_bare_tied_decoder_keeps_the_embedding_as_its_head(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = _bare(tmp_path / "tied", "gpt2", tied=True)
    lm = load_model(str(directory))
    assert not lm.headless and lm.cfg.has_lm_head
    text = "A dog chased the ball."
    # Hugging Face builds the same head from this folder: the tied embedding
    hf = AutoModelForCausalLM.from_pretrained(str(directory)).eval()
    with torch.no_grad():
        want = hf(**AutoTokenizer.from_pretrained(str(directory))(text, return_tensors="pt"))
    assert_close(lm.run(text).logits, want.logits, atol=1e-4, rtol=1e-4)


def test_a_full_decoder_is_not_headless(tiny_models_loaded, minilm):
    assert not tiny_models_loaded["llama"].headless
    assert not tiny_models_loaded["gpt2"].headless
    assert not minilm.headless  # an encoder has no head either, but it is not a decoder
