"""Models the engine does not know, shown through Hugging Face's own code.

For an architecture with no config builder in registry.py (BLOOM, MPT, ...), the attention
pages can still show its attention: `load_foreign` loads `transformers`' own model class with
eager attention (the plain softmax(QKᵀ)V path, the one that can return its patterns), and
`ForeignModel.run` asks it for `output_attentions=True`. The trace then holds the attention
patterns, under the engine's hook names, and nothing else: no queries, keys, MLPs or residual
stream, so every page that needs those says it needs a family the engine knows.

This is never a fallback for a known family: load_model only comes here when the config's
model_type has no builder at all, and only when its caller asks (`foreign=True`).
`trust_remote_code` is never used; weights are read by transformers from the same folder.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from .config import MAX_PARAMS, MAX_SIZES
from .registry import CONFIG_BUILDERS, ModelLoadError
from .runner import LoadedModel
from .tokenizer import Encoding, HFTokenizer
from .trace import Trace

DEFAULT_CTX = 2048  # for configs that name no longest sequence (BLOOM: ALiBi positions)
# Which pages work for such a model, in one line (the app shows it; keep it plain).
PAGES_NOTE = ("runs on Hugging Face's own code, which shows its attention only: the Attention "
              "page works; the other pages need a model family this app knows ({known}).")
KNOWN_NAMES = ("BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, GPT-2, Llama, Mistral, Qwen, "
               "Gemma, Pythia, Phi-3, OPT, GPT-Neo, BART, Marian and T5")  # registry.SUPPORTED


def knows(config: dict) -> bool:
    """Does the engine have its own code for this config.json's model_type?"""
    return config.get("model_type") in CONFIG_BUILDERS


@dataclass(frozen=True)
class ForeignConfig:
    """The few sizes the attention pages read, from Hugging Face's config of the model."""

    model_type: str
    n_layers: int
    n_heads: int
    d_model: int
    n_ctx: int
    causal: bool
    family: str = "foreign"
    has_lm_head: bool = False
    has_pooler: bool = False
    n_token_types: int = 0
    sliding_window: int | None = None  # Hugging Face's own code applies any window itself

    def layer_type(self, layer: int) -> str:
        """Every layer counts as "full" here: no keys are greyed out as beyond a window."""
        return "full"

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def is_decoder(self) -> bool:
        return self.causal

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(eq=False)
class ForeignTrace(Trace):
    """A Trace holding only the attention patterns (and the last hidden state as `final`)."""

    kind: ClassVar[str] = "foreign"


def _causal(hf_config) -> bool:
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    archs = " ".join(getattr(hf_config, "architectures", None) or [])
    if "CausalLM" in archs or "LMHead" in archs:
        return True
    kind = hf_config.model_type
    causal, masked = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES
    return kind in causal and kind not in masked


def _size(hf_config, *names: str, default=None):
    for name in names:
        value = getattr(hf_config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if default is None:
        raise ModelLoadError(f"its config names no {names[0]}, so its attention cannot be laid out")
    return default


def foreign_config(hf_config) -> ForeignConfig:
    return ForeignConfig(
        model_type=hf_config.model_type,
        n_layers=_size(hf_config, "num_hidden_layers", "n_layer", "n_layers"),
        n_heads=_size(hf_config, "num_attention_heads", "n_head", "n_heads"),
        d_model=_size(hf_config, "hidden_size", "d_model", "n_embd"),
        n_ctx=_size(hf_config, "max_position_embeddings", "n_positions", "max_seq_len",
                    "seq_length", default=DEFAULT_CTX),
        causal=_causal(hf_config))


def _check_size(directory: Path, weights: list[Path]) -> None:
    n_bytes = sum(f.stat().st_size for f in weights)
    if n_bytes // 2 > MAX_PARAMS:  # at least 2 bytes a parameter in any checkpoint we read
        raise ModelLoadError(f"the weights in {directory} take {n_bytes / 1e9:.1f} GB, more than "
                             f"a model of {MAX_PARAMS:,} parameters (MAX_PARAMS) could")


def _check_config_size(hf_config, cfg: ForeignConfig) -> None:
    """Refuse, before anything is allocated, a config whose shapes describe more parameters
    than the engine's own families may hold (MAX_PARAMS): the model is built on the meta
    device (shapes only, no memory) and its parameters counted, whatever its weight files say."""
    from transformers import AutoModel

    kind = cfg.model_type
    if cfg.n_layers > MAX_SIZES["n_layers"]:  # every layer is a module, even on meta
        raise ModelLoadError(f"its config.json describes {cfg.n_layers:,} layers; this app "
                             f"loads models of at most {MAX_SIZES['n_layers']:,}")
    try:
        with torch.device("meta"):
            skeleton = AutoModel.from_config(hf_config, attn_implementation="eager")
    except Exception as exc:  # transformers validates configs in many ways
        raise ModelLoadError(f"Hugging Face's code for {kind!r} cannot build a model from this "
                             f"config.json: {type(exc).__name__}: {exc}"[:400]) from exc
    n_params = sum(p.numel() for p in skeleton.parameters())
    n_bytes = 4 * n_params + sum(b.numel() * b.element_size() for b in skeleton.buffers())
    if n_params > MAX_PARAMS:
        raise ModelLoadError(
            f"its config.json describes about {n_params / 1e9:,.1f} billion parameters "
            f"({n_bytes / 1e9:,.0f} GB of memory as this app holds them), more than the "
            f"{MAX_PARAMS / 1e9:,.0f} billion this app loads; pick a smaller model")


def load_foreign(directory: Path, config: dict, name: str, weights: list[Path]) -> "ForeignModel":
    """Hugging Face's own model class for a folder whose architecture the engine does not know
    (`weights`: its weight files, loading.weight_files, checked to lie inside it)."""
    from transformers import AutoConfig, AutoModel

    kind = config.get("model_type")
    if config.get("is_encoder_decoder"):
        raise ModelLoadError(f"“{kind}” is an encoder–decoder this app does not know, and its "
                             "attention can only be shown for a family it knows")
    _check_size(directory, weights)
    try:
        hf_config = AutoConfig.from_pretrained(str(directory), local_files_only=True,
                                               trust_remote_code=False)
    except Exception as exc:  # transformers' strict config checks raise their own kinds
        from transformers import CONFIG_MAPPING

        if kind not in CONFIG_MAPPING:
            raise ModelLoadError(f"unsupported architecture {kind!r}: neither this app nor the "
                                 "installed transformers library knows it") from exc
        raise ModelLoadError(f"its config.json does not fit Hugging Face's {kind!r} code: "
                             f"{type(exc).__name__}: {exc}"[:400]) from exc
    cfg = foreign_config(hf_config)
    _check_config_size(hf_config, cfg)
    try:
        model = AutoModel.from_pretrained(
            str(directory), config=hf_config, attn_implementation="eager", dtype=torch.float32,
            local_files_only=True, trust_remote_code=False).eval()
    except Exception as exc:  # transformers raises many kinds: report, never crash the page
        raise ModelLoadError(f"Hugging Face's code for {kind!r} could not load {directory}: "
                             f"{type(exc).__name__}: {exc}"[:400]) from exc
    try:
        tokenizer = HFTokenizer(directory)
    except Exception as exc:  # transformers raises OSError, ValueError, TypeError...
        raise ModelLoadError(f"could not load the tokenizer from {directory}: {exc}") from exc
    return ForeignModel(name, model, cfg, tokenizer)


class ForeignModel(LoadedModel):
    """Hugging Face's model, run for its attention patterns. Shared and never mutated."""

    foreign = True

    def __init__(self, name: str, model, cfg: ForeignConfig, tokenizer) -> None:
        self.name = name
        self.model = model
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.device = torch.device("cpu")
        self.notice = None
        takes = inspect.signature(model.forward).parameters
        self._types = "token_type_ids" in takes and getattr(model.config, "type_vocab_size", 0) > 1

    @property
    def hook_names(self) -> tuple[str, ...]:
        return tuple(f"blocks.{i}.attn.hook_pattern" for i in range(self.cfg.n_layers))

    @property
    def headless(self) -> bool:
        return False

    @property
    def pages_note(self) -> str:
        return f"This model ({self.cfg.model_type}) " + PAGES_NOTE.format(known=KNOWN_NAMES)

    def run_ids(self, *args, **kwargs):
        raise ValueError(self.pages_note)

    def _run(self, enc: Encoding, keep) -> ForeignTrace:
        kwargs = dict(input_ids=enc.input_ids, attention_mask=enc.attention_mask)
        if self._types:
            kwargs["token_type_ids"] = enc.token_type_ids
        try:
            with torch.no_grad():
                out = self.model(**kwargs, output_attentions=True)
        except Exception as exc:  # Hugging Face's kernels raise many kinds: a message instead
            raise ValueError(f"Hugging Face's own code for this model ({self.cfg.model_type}) "
                             "stopped with an error on this text, so there is no attention to "
                             f"show ({type(exc).__name__}: {exc})"[:400]) from exc
        patterns = getattr(out, "attentions", None)  # per layer: [batch, head, q_pos, k_pos]
        batch, n_pos = enc.input_ids.shape
        expected = (batch, self.cfg.n_heads, n_pos, n_pos)
        if not patterns or len(patterns) != self.cfg.n_layers or any(
                p is None or tuple(p.shape) != expected for p in patterns):
            raise ValueError(f"{self.name}: Hugging Face's {self.cfg.model_type} code returned no "
                             f"attention patterns of the expected shape {expected}, so there is "
                             "no attention to show")
        cache = {name: p.float().cpu() for name, p in zip(self.hook_names, patterns)
                 if keep is None or keep(name)}
        final = getattr(out, "last_hidden_state", None)  # [batch, pos, d_model]
        return ForeignTrace(
            model_name=self.name, cfg=self.cfg, batch_tokens=enc.tokens,
            input_ids=enc.input_ids, attention_mask=enc.attention_mask,
            token_type_ids=enc.token_type_ids, special_mask=enc.special_mask,
            dropped=enc.n_dropped, cache=cache, batched=batch > 1,
            typed_special=enc.typed_special,
            final=None if final is None else final.float().cpu())
