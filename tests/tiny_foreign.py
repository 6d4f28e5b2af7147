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
