"""Tiny random-weight checkpoints of the decoder families beyond GPT-2 and Llama, saved like a
user's model directory (config.json, model.safetensors, a fast tokenizer) by transformers'
own classes. Sizes are odd on purpose: odd head counts, grouped-query attention where the
family has it, windows shorter than the test texts, and every optional part switched on
(partial rotary, biases, soft-capping, q/k norms, rope scaling), so that no mistake can hide.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import torch

from tiny_models import _bpe_tokenizer, _save, _save_tokenizer

WINDOW = 4  # shorter than the test texts, so the sliding mask removes keys


def _tokenizer(directory: Path, special: list[str], template: str | None, **named) -> int:
    """Write a byte-level BPE tokenizer; return its vocabulary size."""
    tok = _bpe_tokenizer(special, template)
    _save_tokenizer(tok, directory, **named)
    return tok.get_vocab_size()


def _llama_style(directory: Path, config_cls: str, model_cls: str, **settings) -> Path:
    """A family that transformers builds like Llama (one tokenizer with <s>, </s>, <unk>)."""
    import transformers

    directory.mkdir(parents=True, exist_ok=True)
    # pad_token named: Qwen2's tokenizer class would otherwise add <|endoftext|> past the vocab
    vocab = _tokenizer(directory, ["<s>", "</s>", "<unk>"], "<s> $A", bos_token="<s>",
                       eos_token="</s>", unk_token="<unk>", pad_token="</s>")
    base = dict(vocab_size=vocab, hidden_size=40, intermediate_size=52, num_hidden_layers=3,
                num_attention_heads=5, num_key_value_heads=1, head_dim=8,
                max_position_embeddings=64, tie_word_embeddings=False, bos_token_id=0,
                eos_token_id=1, pad_token_id=None)
    base.update(settings)
    base = {k: v for k, v in base.items() if v is not None or k == "pad_token_id"}
    config = getattr(transformers, config_cls)(**base)
    torch.manual_seed(0)
    return _save(getattr(transformers, model_cls)(config), directory)


def make_qwen2(directory: Path) -> Path:
    return _llama_style(directory, "Qwen2Config", "Qwen2ForCausalLM")  # q, k, v biases


def make_qwen3(directory: Path) -> Path:
    return _llama_style(directory, "Qwen3Config", "Qwen3ForCausalLM", num_attention_heads=3,
                        attention_bias=True)


def make_llama3(directory: Path) -> Path:
    """Llama 3.1's rotary scaling: with 8-number heads, two of the four frequencies have
    wavelengths past original_max_position_embeddings and are rescaled."""
    rope = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    return _llama_style(directory, "LlamaConfig", "LlamaForCausalLM", num_attention_heads=3,
                        hidden_size=24,
                        rope_parameters=rope)


def make_mistral(directory: Path) -> Path:
    return _llama_style(directory, "MistralConfig", "MistralForCausalLM", sliding_window=WINDOW)


def make_gemma(directory: Path) -> Path:
    return _llama_style(directory, "GemmaConfig", "GemmaForCausalLM", num_attention_heads=3,
                        hidden_size=24, tie_word_embeddings=True)


def make_gemma2(directory: Path) -> Path:
    """Soft caps low enough to bite on random weights; query_pre_attn_scalar != head_dim."""
    return _llama_style(directory, "Gemma2Config", "Gemma2ForCausalLM", num_attention_heads=3,
                        hidden_size=24, tie_word_embeddings=True, query_pre_attn_scalar=10,
                        attn_logit_softcapping=4.0, final_logit_softcapping=3.0,
                        sliding_window=WINDOW)


def make_gemma3(directory: Path) -> Path:
    rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0}}
    return _llama_style(directory, "Gemma3TextConfig", "Gemma3ForCausalLM",
                        num_attention_heads=3, hidden_size=24, tie_word_embeddings=True,
                        query_pre_attn_scalar=12, sliding_window=WINDOW, rope_parameters=rope,
                        layer_types=["sliding_attention", "full_attention", "sliding_attention"])


def make_gemma3_capped(directory: Path) -> Path:
    """Gemma 3 with attn_logit_softcapping set, low enough to bite on random weights (Hugging
    Face's Gemma 3 stores the field and never applies it)."""
    return _llama_style(directory, "Gemma3TextConfig", "Gemma3ForCausalLM",
                        num_attention_heads=3, hidden_size=24, tie_word_embeddings=True,
                        query_pre_attn_scalar=12, sliding_window=WINDOW,
                        attn_logit_softcapping=0.5,
                        layer_types=["sliding_attention", "full_attention", "sliding_attention"])


def make_embedding_gemma(directory: Path, window: int = 2 * WINDOW) -> Path:
    """EmbeddingGemma's layout: Gemma3TextModel (no head) with use_bidirectional_attention,
    every key both ways on full layers, a two-sided window on sliding ones."""
    return _llama_style(directory, "Gemma3TextConfig", "Gemma3TextModel",
                        num_attention_heads=3, hidden_size=24, tie_word_embeddings=True,
                        query_pre_attn_scalar=12, sliding_window=window,
                        use_bidirectional_attention=True,
                        layer_types=["sliding_attention", "full_attention", "sliding_attention"])


def make_gemma3_multimodal(directory: Path) -> Path:
    """A Gemma 3 with a (tiny) vision tower, as the 4B-and-up checkpoints ship: the engine
    loads its language model only."""
    from transformers import (
        Gemma3Config, Gemma3ForConditionalGeneration, Gemma3TextConfig, SiglipVisionConfig,
    )

    directory.mkdir(parents=True, exist_ok=True)
    vocab = _tokenizer(directory, ["<s>", "</s>", "<unk>"], "<s> $A", bos_token="<s>",
                       eos_token="</s>", unk_token="<unk>", pad_token="</s>")
    text = Gemma3TextConfig(vocab_size=vocab, hidden_size=24, intermediate_size=52,
                            num_hidden_layers=3, num_attention_heads=3, num_key_value_heads=1,
                            head_dim=8, max_position_embeddings=64, query_pre_attn_scalar=12,
                            sliding_window=WINDOW, bos_token_id=0, eos_token_id=1,
                            pad_token_id=1, layer_types=["sliding_attention", "full_attention",
                                                         "sliding_attention"])
    vision = SiglipVisionConfig(hidden_size=16, intermediate_size=16, num_hidden_layers=1,
                                num_attention_heads=2, image_size=28, patch_size=14)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                          image_token_index=vocab - 1, boi_token_index=vocab - 2,
                          eoi_token_index=vocab - 3)
    torch.manual_seed(0)
    return _save(Gemma3ForConditionalGeneration(config), directory)


def make_phi3(directory: Path) -> Path:
    """Fused q/k/v and gate/up, partial rotary (6 of 8 numbers), a sliding window."""
    return _llama_style(directory, "Phi3Config", "Phi3ForCausalLM", head_dim=None,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                         "partial_rotary_factor": 0.75},
                        sliding_window=WINDOW, pad_token_id=None)


def make_neox(directory: Path, **overrides) -> Path:
    """Pythia's layout: parallel attention and MLP, a quarter of each head rotated."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    vocab = _tokenizer(directory, ["<|endoftext|>", "<|padding|>"], None,
                       eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                       pad_token="<|padding|>")
    config = GPTNeoXConfig(vocab_size=vocab, hidden_size=48, num_hidden_layers=3,
                           num_attention_heads=3, intermediate_size=60,
                           max_position_embeddings=64, bos_token_id=0, eos_token_id=0,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                            "partial_rotary_factor": 0.25}, **overrides)
    torch.manual_seed(0)
    return _save(GPTNeoXForCausalLM(config), directory)


def make_opt(directory: Path) -> Path:
    from transformers import OPTConfig, OPTForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    vocab = _tokenizer(directory, ["<s>", "<pad>", "</s>", "<unk>"], "</s> $A",
                       bos_token="</s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
    config = OPTConfig(vocab_size=vocab, hidden_size=24, num_hidden_layers=3,
                       num_attention_heads=3, ffn_dim=44, max_position_embeddings=64,
                       word_embed_proj_dim=24, pad_token_id=1, bos_token_id=2, eos_token_id=2)
    torch.manual_seed(0)
    return _save(OPTForCausalLM(config), directory)


def make_gpt_neo(directory: Path) -> Path:
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    vocab = _tokenizer(directory, ["<|endoftext|>"], None, eos_token="<|endoftext|>",
                       bos_token="<|endoftext|>")
    config = GPTNeoConfig(vocab_size=vocab, hidden_size=24, num_layers=3, num_heads=3,
                          attention_types=[[["global", "local", "local"], 1]],
                          window_size=WINDOW, max_position_embeddings=64,
                          bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    return _save(GPTNeoForCausalLM(config), directory)


BUILDERS = {
    "neox": make_neox, "qwen2": make_qwen2, "qwen3": make_qwen3, "llama3": make_llama3,
    "mistral": make_mistral, "gemma": make_gemma, "gemma2": make_gemma2, "gemma3": make_gemma3,
    "gemma3_multimodal": make_gemma3_multimodal,
    "phi3": make_phi3, "opt": make_opt, "gpt_neo": make_gpt_neo,
}


# Hugging Face module paths of the final norm, whose input is the residual stream after the
# last block (HF's hidden_states give only its output).
FINAL_NORMS = {"neox": "gpt_neox.final_layer_norm", "opt": "model.decoder.final_layer_norm",
               "neox_sequential": "gpt_neox.final_layer_norm",
               "gpt_neo": "transformer.ln_f", "gemma3_multimodal": "model.language_model.norm"}


# Variants checked by the parity tests only (not by every page and analysis)
VARIANTS = {"neox_sequential": lambda d: make_neox(d, use_parallel_residual=False),
            "gemma3_capped": make_gemma3_capped, "embedding_gemma": make_embedding_gemma}


@functools.cache
def saved(family: str) -> Path:
    """The family's checkpoint, built once per test process in a temporary folder."""
    root = Path(tempfile.mkdtemp(prefix="tiny_decoders_"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return {**BUILDERS, **VARIANTS}[family](root / family)


@functools.cache
def loaded(family: str):
    """(our LoadedModel through load_model(path), HF's eager model from the same folder)."""
    from transformers import AutoModelForCausalLM

    from model import load_model

    path = saved(family)
    hf = AutoModelForCausalLM.from_pretrained(str(path), attn_implementation="eager").eval()
    return load_model(str(path)), hf
