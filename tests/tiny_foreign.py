"""A tiny random-weight BLOOM checkpoint: an architecture the engine has no code for, saved
like a user's model directory, for the path that shows it through Hugging Face's own code."""

from __future__ import annotations

from pathlib import Path

import torch

from tiny_models import _bpe_tokenizer, _save, _save_tokenizer


def make_bloom(directory: Path) -> Path:
    from transformers import BloomConfig, BloomForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    tok = _bpe_tokenizer(["<s>", "</s>", "<pad>", "<unk>"], None)
    _save_tokenizer(tok, directory, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                    unk_token="<unk>")
    cfg = BloomConfig(vocab_size=tok.get_vocab_size(), hidden_size=30, n_layer=2, n_head=3,
                      pad_token_id=tok.token_to_id("<pad>"))
    torch.manual_seed(0)
    return _save(BloomForCausalLM(cfg), directory)


def make_mixtral(directory: Path, intermediate_size: int = 37) -> Path:
    """A tiny Mixtral (mixture of experts): another architecture the engine has no code for.
    37 numbers of float32 are 148 bytes, not a multiple of 16, so Hugging Face's grouped
    matrix product for the experts raises on any text."""
    from transformers import MixtralConfig, MixtralForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    tok = _bpe_tokenizer(["<s>", "</s>", "<pad>", "<unk>"], None)
    _save_tokenizer(tok, directory, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                    unk_token="<unk>")
    cfg = MixtralConfig(vocab_size=tok.get_vocab_size(), hidden_size=32,
                        intermediate_size=intermediate_size, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                        num_experts_per_tok=2, pad_token_id=tok.token_to_id("<pad>"))
    torch.manual_seed(0)
    return _save(MixtralForCausalLM(cfg), directory)
