"""Tiny random-weight DistilBERT, XLM-RoBERTa and ELECTRA checkpoints, saved like a user's
model directory (config.json, model.safetensors, a tokenizer), as in tests/tiny_models.py.

Head counts are odd (3) so that a reshape that mixes heads cannot pass by symmetry, and
ELECTRA's embeddings are narrower than its residual stream (embedding_size 20, hidden 36) as in
electra-small, so the projection between them is exercised.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tiny_models import _bpe_tokenizer, _save, _save_tokenizer, _wordpiece_tokenizer

SIZES = dict(hidden_size=36, num_hidden_layers=2, num_attention_heads=3, intermediate_size=52,
             max_position_embeddings=40)


def make_distilbert(directory: Path, **overrides) -> Path:
    from transformers import DistilBertConfig, DistilBertModel

    directory.mkdir(parents=True, exist_ok=True)
    _wordpiece_tokenizer(directory)
    settings = dict(vocab_size=64, dim=36, n_layers=2, n_heads=3, hidden_dim=52,
                    max_position_embeddings=40)
    settings.update(overrides)
    torch.manual_seed(0)
    return _save(DistilBertModel(DistilBertConfig(**settings)), directory)


def make_xlm_roberta(directory: Path) -> Path:
    from transformers import XLMRobertaConfig, XLMRobertaModel

    directory.mkdir(parents=True, exist_ok=True)
    special = ["<s>", "<pad>", "</s>", "<unk>"]
    tok = _bpe_tokenizer(special, "<s> $A </s>")
    _save_tokenizer(tok, directory, bos_token="<s>", pad_token="<pad>", eos_token="</s>",
                    unk_token="<unk>")
    sizes = {**SIZES, "max_position_embeddings": 42}  # 40 positions after the padding index
    cfg = XLMRobertaConfig(vocab_size=tok.get_vocab_size(), **sizes, pad_token_id=1,
                           type_vocab_size=1)
    torch.manual_seed(0)
    return _save(XLMRobertaModel(cfg, add_pooling_layer=True), directory)


def make_electra(directory: Path, **overrides) -> Path:
    from transformers import ElectraConfig, ElectraModel

    directory.mkdir(parents=True, exist_ok=True)
    _wordpiece_tokenizer(directory)
    settings = dict(vocab_size=64, embedding_size=20, **SIZES)
    settings.update(overrides)
    torch.manual_seed(0)
    return _save(ElectraModel(ElectraConfig(**settings)), directory)


BUILDERS = {"distilbert": make_distilbert, "xlm-roberta": make_xlm_roberta,
            "electra": make_electra}
