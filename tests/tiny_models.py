"""Tiny random-weight Hugging Face checkpoints, saved like a user's model directory.

Each builder writes config.json, model.safetensors and a fast tokenizer (trained here on a
few sentences, since no real tokenizer can be downloaded) and returns the directory.
"""

from __future__ import annotations

from pathlib import Path

import torch

CORPUS = [
    "The cat sat on the mat.", "A dog chased the ball across the park!",
    "Attention lets every token look at every other token.",
    "Queries meet keys; the softmax turns scores into weights.",
    "I love cats! He hates pineapple pizza.", "Transformers stack layers of attention and MLPs.",
]


def _bpe_tokenizer(special: list[str], template: str | None):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special,  # 256 bytes + specials + merges
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    if template:
        first = special[0]
        tok.post_processor = processors.TemplateProcessing(
            single=template, pair=template + " $B",
            special_tokens=[(s, tok.token_to_id(s)) for s in special if s in template],
        ) if first in template else None
    return tok


def _save_tokenizer(tok, directory: Path, **special) -> None:
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(directory)


def _wordpiece_tokenizer(directory: Path) -> None:
    from transformers import BertTokenizerFast

    words = sorted({w.strip(".,;!?").lower() for line in CORPUS for w in line.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", ";", "!", "?"] + words
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # transformers 5 takes the vocabulary as `vocab=` (a path or a dict) and silently ignores
    # the old `vocab_file=`, which left only the special tokens and mapped every word to [UNK].
    BertTokenizerFast(vocab=str(directory / "vocab.txt")).save_pretrained(directory)


def _save(model, directory: Path) -> Path:
    # HF initialises norms to exactly 1 / 0 and biases to 0; randomise everything so that no
    # swapped or missing parameter can hide. Norm gains stay near 1: gains near 0 would shrink
    # every activation and leave attention almost uniform, which hides mistakes too.
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        p.data.normal_(0, 0.3 if p.dim() > 1 else 0.1)
        if p.dim() == 1 and name.endswith("weight") and ("norm" in name.lower() or ".ln_" in name):
            p.data += 1.0
    model.save_pretrained(directory, safe_serialization=True)
    return directory


def make_bert(directory: Path, **overrides) -> Path:
    from transformers import BertConfig, BertModel

    directory.mkdir(parents=True, exist_ok=True)
    _wordpiece_tokenizer(directory)
    cfg = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=40, **overrides)
    torch.manual_seed(0)
    return _save(BertModel(cfg, add_pooling_layer=True), directory)


def make_roberta(directory: Path) -> Path:
    from transformers import RobertaConfig, RobertaModel

    directory.mkdir(parents=True, exist_ok=True)
    special = ["<s>", "<pad>", "</s>", "<unk>"]
    tok = _bpe_tokenizer(special, "<s> $A </s>")
    _save_tokenizer(tok, directory, bos_token="<s>", pad_token="<pad>", eos_token="</s>",
                    unk_token="<unk>")
    cfg = RobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=48,
                        max_position_embeddings=42, pad_token_id=1, type_vocab_size=1)
    torch.manual_seed(0)
    return _save(RobertaModel(cfg, add_pooling_layer=True), directory)


def make_gpt2(directory: Path) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    directory.mkdir(parents=True, exist_ok=True)
    tok = _bpe_tokenizer(["<|endoftext|>"], None)
    _save_tokenizer(tok, directory, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    eos = tok.token_to_id("<|endoftext|>")
    cfg = GPT2Config(vocab_size=tok.get_vocab_size(), n_embd=32, n_layer=2, n_head=4,
                     n_positions=40, bos_token_id=eos, eos_token_id=eos)
    torch.manual_seed(0)
    return _save(GPT2LMHeadModel(cfg), directory)


def make_llama(directory: Path, **overrides) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    special = ["<s>", "</s>", "<unk>"]
    tok = _bpe_tokenizer(special, "<s> $A")
    _save_tokenizer(tok, directory, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    settings = dict(vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=56,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                    max_position_embeddings=64, tie_word_embeddings=False)
    settings.update(overrides)
    torch.manual_seed(0)
    return _save(LlamaForCausalLM(LlamaConfig(**settings)), directory)


def chance_score(length: int) -> float:
    """The induction score of a head that spreads its attention evenly over every allowed key
    (causal: query i sees i + 1 keys)."""
    return sum(1.0 / (i + 1) for i in range(length, 2 * length)) / length
