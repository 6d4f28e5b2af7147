"""How the sidebar names the models: a short label that fits the model box, with the model's
group (reads text / writes text / translates), and a longer description (with the model's
size) shown as a caption under it. Groups and sizes are read from each model's config.json,
never typed in."""

from __future__ import annotations

import functools

from model.loading import read_config
from model.registry import BUNDLED, OWN_MODEL_TYPE, ModelLoadError, config_from_hf

from .text import md_escape

NAMES = {"minilm": "MiniLM"}  # any other bundled model is shown by its own name
# The sidebar groups models by what they are, read from each config (never typed): an encoder
# reads text, a decoder writes text, an encoder-decoder translates (rewrites one text into
# another). The box lists the groups in this order, each model labelled with its group.
GROUPS = ("reads text", "writes text", "translates")
ABOUT = {  # the caption under the model box
    "minilm": "all-MiniLM-L6-v2, a BERT-style encoder: every token may look at the whole text.",
    "tiny-chars": "Trained in this project: a decoder that reads one character at a time and "
                  "predicts the next one.",
    "tiny-induction": "Trained in this project: a decoder with attention only, whose heads "
                      "learned to continue a repeated stretch of letters.",
    "tiny-reverse": "Trained in this project: an encoder reads a word and a decoder writes it "
                    "backwards, looking at the encoder through cross-attention.",
    "tiny-words": "Trained in this project: a decoder that reads whole words of simple English "
                  "sentences and predicts the next word (who gets the drink, is or are).",
}


@functools.cache
def _sizes(name: str) -> tuple[tuple[int, int, int], ...]:
    """(layers, heads, vector size) of each stack of a bundled model: one, or an encoder and a
    decoder. Empty when its config cannot be read (the label then leaves the size out)."""
    try:
        data = read_config(BUNDLED[name]())
        if data.get("model_type") == OWN_MODEL_TYPE:
            stacks = [data["config"]] + ([data["decoder"]] if "decoder" in data else [])
            return tuple((int(s["n_layers"]), int(s["n_heads"]), int(s["d_model"]))
                         for s in stacks)
        cfg = config_from_hf(data)
        return ((cfg.n_layers, cfg.n_heads, cfg.d_model),)
    except (ModelLoadError, KeyError, TypeError, ValueError, OSError):
        return ()


@functools.cache
def group(name: str) -> str | None:
    """"reads text", "writes text" or "translates", from a bundled model's config (None when
    it cannot be read)."""
    try:
        data = read_config(BUNDLED[name]())
        if data.get("model_type") == OWN_MODEL_TYPE:
            if "decoder" in data:
                return GROUPS[2]
            return GROUPS[1] if data["config"].get("causal", True) else GROUPS[0]
        return GROUPS[1] if config_from_hf(data).causal else GROUPS[0]
    except (ModelLoadError, KeyError, TypeError, ValueError, OSError, AttributeError):
        return None


def in_groups(names: list[str]) -> list[str]:
    """Bundled names ordered by group (reads, writes, translates), each group in its order."""
    rank = {g: i for i, g in enumerate(GROUPS)}
    return sorted(names, key=lambda n: rank.get(group(n), len(GROUPS)))


def group_of(loaded) -> str:
    """The group of any loaded model, from its config."""
    if getattr(loaded.model, "dec_cfg", None) is not None:
        return GROUPS[2]
    return GROUPS[1] if loaded.cfg.causal else GROUPS[0]


def about_loaded(loaded) -> str:
    """The caption for a model from a folder or the hub: its group and sizes, from its config."""
    cfg = loaded.cfg
    kind = getattr(cfg, "model_type", None) or (
        "decoder" if cfg.causal else "encoder")
    n = sum(p.numel() for p in loaded.model.parameters())
    count = (f"{n / 1e9:,.2f} billion" if n >= 1e9 else f"{n / 1e6:,.1f} million" if n >= 1e6
             else f"{n:,}")
    return (f"It {group_of(loaded)} ({md_escape(kind)}): {cfg.n_layers} layers × "
            f"{cfg.n_heads} heads; each token is a vector of {cfg.d_model} numbers; {count} "
            "parameters.")


def _size(name: str) -> str:
    sizes = _sizes(name)
    if not sizes:
        return ""
    layers = (f"{sizes[0][0]} encoder + {sizes[1][0]} decoder" if len(sizes) == 2
              else str(sizes[0][0]))
    heads = {s[1] for s in sizes}
    if len(heads) > 1:  # stacks with different head counts: say each
        return ", ".join(f"{s[0]} layers × {s[1]} heads" for s in sizes)
    return f"{layers} layers × {heads.pop()} heads"


def short_label(name: str) -> str:
    """"MiniLM (reads text)": short enough for the sidebar's model box (about 30 characters
    show in it); the size goes in the caption under the box."""
    if name not in BUNDLED:
        return name
    shown = NAMES.get(name, name)
    kind = group(name)
    return f"{shown} ({kind})" if kind else shown


def description(name: str) -> str | None:
    """The caption under the model box: what it is, then its size (None: not bundled)."""
    if name not in BUNDLED:
        return None
    parts = [ABOUT.get(name, "")]

    sizes = _sizes(name)
    if sizes:
        parts.append(f"{_size(name)}; each token is a vector of {sizes[0][2]} numbers.")
    return " ".join(p for p in parts if p) or None
