"""Tiny random-weight encoder-decoder checkpoints (BART, Marian, T5, T5 v1.1's gated-GELU, mT5),
saved by transformers' own classes like a user's model directory. Sizes are odd on purpose:
odd head counts (3 and 5, different in the encoder and decoder where the family allows),
d_model 30 or 36, heads of 6 or 7 numbers; every weight random, final_logits_bias too.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import torch

from tiny_models import _bpe_tokenizer, _save, _save_tokenizer

FAMILIES = ["bart", "marian", "t5", "t5_gated", "mt5"]


def _tokenizer(directory: Path, t5: bool) -> int:
    if t5:  # T5: </s> after the text, no start token
        tok = _bpe_tokenizer(["<pad>", "</s>", "<unk>"], "$A </s>")
        tok.post_processor = None
        from tokenizers import processors

        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)])
        _save_tokenizer(tok, directory, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    else:  # BART: <s> text </s>
        tok = _bpe_tokenizer(["<s>", "<pad>", "</s>", "<unk>"], "<s> $A </s>")
        _save_tokenizer(tok, directory, bos_token="<s>", pad_token="<pad>", eos_token="</s>",
                        unk_token="<unk>")
    return tok.get_vocab_size()


def _randomise_buffers(model) -> None:
    """final_logits_bias is a buffer, which tiny_models._save leaves at zero."""
    generator = torch.Generator().manual_seed(1)
    for name, buf in model.named_buffers():
        if name.endswith("final_logits_bias"):
            buf.copy_(torch.randn(buf.shape, generator=generator) * 0.3)


def make(family: str, directory: Path) -> Path:
    import transformers

    directory.mkdir(parents=True, exist_ok=True)
    t5 = family.startswith("t5") or family == "mt5"
    vocab = _tokenizer(directory, t5)
    if t5:
        prefix = "MT5" if family == "mt5" else "T5"
        config = getattr(transformers, prefix + "Config")(
            vocab_size=vocab, d_model=30, d_kv=7, d_ff=44, num_layers=2, num_decoder_layers=3,
            num_heads=5, relative_attention_num_buckets=12, relative_attention_max_distance=20,
            feed_forward_proj="relu" if family == "t5" else "gated-gelu",
            tie_word_embeddings=family == "t5", pad_token_id=0, eos_token_id=1,
            decoder_start_token_id=0)
        model = getattr(transformers, prefix + "ForConditionalGeneration")(config)
    else:
        cls = "Marian" if family == "marian" else "Bart"
        config = getattr(transformers, cls + "Config")(
            vocab_size=vocab, d_model=36, encoder_layers=2, decoder_layers=3,
            encoder_attention_heads=3, decoder_attention_heads=9 if family == "bart" else 3,
            encoder_ffn_dim=44, decoder_ffn_dim=38, max_position_embeddings=64,
            activation_function="gelu" if family == "bart" else "swish",
            scale_embedding=family == "marian", pad_token_id=1, bos_token_id=0, eos_token_id=2,
            decoder_start_token_id=2 if family == "bart" else 1, forced_eos_token_id=None)
        model = (transformers.MarianMTModel if family == "marian"
                 else transformers.BartForConditionalGeneration)(config)
    torch.manual_seed(0)
    with torch.no_grad():
        _randomise_buffers(model)
    return _save(model, directory)


_ROOT = Path(tempfile.mkdtemp(prefix="tiny_seq2seq_"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)


@functools.cache
def folder(family: str) -> Path:
    return make(family, _ROOT / family)


@functools.cache
def loaded(family: str):
    """(our loaded model, HF's eager model) for one family, each built once per session."""
    import transformers

    from model.loading import load_model

    path = folder(family)
    hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(
        path, attn_implementation="eager").eval()
    return load_model(str(path), device="cpu"), hf
