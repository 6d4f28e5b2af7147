"""“Check these numbers”: run Hugging Face's own implementation of the same model on the same
tokens and report, per layer, the worst absolute difference from our run, for the attention
patterns and for the hidden states (the residual stream).

The reference is `transformers`' model class with eager attention (the plain softmax(QKᵀ)V
path that can return its patterns), read from the same local directory and safetensors our
model came from, offline (`local_files_only`). It is loaded only when asked, for one check,
and freed afterwards (del + gc), so it never sits beside the shared model.

Our own models (this project's format, weights/ and the training page) have no Hugging Face
class: `reference_check` returns a plain statement instead of a table.

What is compared, per layer l (all heads, all tokens of the text):
- attention: our `blocks.l.attn.hook_pattern` against HF's `attentions[l]`;
- hidden: the residual stream after block l against HF's `hidden_states[l + 1]`, and the
  embeddings (before block 0) against `hidden_states[0]`. Pre-LN decoders (GPT-2, Llama): HF's
  last hidden state is taken after the final norm, so layer n−1 is compared there (our
  `trace.final`).
A layer passes when both are at most TOLERANCE (1e-4; the parity tests use 1e-5 relative and
absolute, and measure 0 on MiniLM: 1e-4 leaves room for other CPUs' summation order while a
real mistake moves patterns by far more).
"""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from model.hook_names import hook_names

TOLERANCE = 1e-4
OWN_MODEL_TYPE = "attention_lab"  # model/registry.py: this project's own format


@dataclass
class LayerDifference:
    """The worst |ours − HF| over one layer's heads and tokens."""

    layer: str  # "embeddings", "layer 0", ...
    attention: float | None  # None for the embeddings (no attention there)
    hidden: float

    @property
    def passed(self) -> bool:
        return self.hidden <= TOLERANCE and (self.attention is None
                                             or self.attention <= TOLERANCE)


@dataclass
class ReferenceCheck:
    """The result: a table (rows) or, when HF cannot run this model, only a statement."""

    statement: str  # one or two plain sentences: what was compared, or why nothing was
    rows: list[LayerDifference] = field(default_factory=list)
    reference: str = ""  # the HF class that ran, e.g. "BertModel"

    @property
    def supported(self) -> bool:
        return bool(self.rows)

    @property
    def passed(self) -> bool:
        return self.supported and all(r.passed for r in self.rows)

    @property
    def worst(self) -> float:
        return max([r.hidden for r in self.rows]
                   + [r.attention for r in self.rows if r.attention is not None], default=0.0)

    def table(self) -> list[dict]:
        """Rows for a table: layer, worst differences, pass mark."""
        return [{"layer": r.layer, "attention": r.attention, "hidden states": r.hidden,
                 "within 1e-4": "✓" if r.passed else "✗"} for r in self.rows]


def unsupported_reason(loaded, directory: Path | None) -> str | None:
    """Why Hugging Face's implementation cannot be run for this model, or None if it can."""
    own = ("This is one of this project's own models. Hugging Face has no code for it, so "
           "there is no second implementation to compare with. (For a model Hugging Face can "
           "load, such as MiniLM, this compares every layer.)")
    if not hasattr(loaded, "cfg") or loaded.cfg.family == "own":
        return own
    if getattr(loaded.model, "dec_cfg", None) is not None:  # T5, BART, Marian from a folder
        return ("This check compares one stack of layers, and this model has an encoder and a "
                "separate decoder, so it does not cover it yet. (The project's tests compare "
                "this app's version of it with Hugging Face's, layer by layer.)")
    if getattr(loaded, "foreign", False):
        return ("This model already runs on Hugging Face's own code (this app has no code of "
                "its own for its architecture), so there is no second implementation to compare.")
    if directory is None or not (Path(directory) / "config.json").is_file():
        return ("There is no model folder on this computer to load Hugging Face's "
                "implementation from, so the check cannot run for this model.")
    try:
        config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "The model folder's config.json could not be read, so the check cannot run."
    if config.get("model_type") == OWN_MODEL_TYPE or loaded.cfg.family == "own":
        return own
    return None


def _load_reference(loaded, directory: Path):
    """HF's model class for this checkpoint, eager attention, float32, offline."""
    from transformers import AutoModel, AutoModelForCausalLM

    cls = AutoModelForCausalLM if loaded.cfg.causal and loaded.cfg.has_lm_head else AutoModel
    return cls.from_pretrained(str(directory), attn_implementation="eager",
                               dtype=torch.float32, local_files_only=True).eval()


def _worst(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        return float("inf")  # a different shape is a failure, never a crash
    return float((a.detach().float().cpu() - b.detach().float().cpu()).abs().max())


def _kept(cfg) -> set[str]:
    """What the comparison reads: every block's input and output and every pattern."""
    names = hook_names(cfg)
    return {*names.every_layer("attn", "pattern"), *names.every_layer("resid", "pre"),
            *names.every_layer("resid", "post")}


def compare(loaded, trace, out) -> list[LayerDifference]:
    """Per-layer worst differences between our trace and HF's output (one batch)."""
    cfg, names = loaded.cfg, hook_names(loaded.cfg)
    ours = [trace.cache[names.resid(0, "pre")]] + [
        trace.cache[name] for name in names.every_layer("resid", "post")]
    if cfg.block != "post_ln" and trace.final is not None:
        ours[-1] = trace.final  # HF's last hidden state is after the final norm
    theirs = list(out.hidden_states)
    rows = [LayerDifference("embeddings", None, _worst(ours[0], theirs[0]))]
    for layer in range(cfg.n_layers):
        attn = _worst(trace.cache[names.attn(layer, "pattern")], out.attentions[layer])
        rows.append(LayerDifference(f"layer {layer}", attn,
                                    _worst(ours[layer + 1], theirs[layer + 1])))
    return rows


def reference_check(loaded, directory: Path | None, text: str,
                    pair: str | None = None) -> ReferenceCheck:
    """Run our model and HF's on the same tokens; a table of worst differences per layer."""
    reason = unsupported_reason(loaded, directory)
    if reason:
        return ReferenceCheck(reason)
    trace = loaded.run(text, pair or None, keep=_kept(loaded.cfg).__contains__)
    try:
        hf = _load_reference(loaded, Path(directory))
    except Exception as exc:  # any loading failure is reported, never raised to the page
        return ReferenceCheck("Hugging Face's implementation could not load this model folder "
                              f"({type(exc).__name__}), so the check cannot run.")
    try:
        kwargs = dict(input_ids=trace.input_ids, attention_mask=trace.attention_mask)
        if loaded.cfg.n_token_types:
            kwargs["token_type_ids"] = trace.token_type_ids
        with torch.no_grad():
            out = hf(**kwargs, output_attentions=True, output_hidden_states=True)
        rows, name = compare(loaded, trace, out), type(hf).__name__
        del out
    except Exception as exc:  # reported on the page, never raised to it
        return ReferenceCheck("Hugging Face's implementation failed on this input "
                              f"({type(exc).__name__}), so the check cannot run.")
    finally:
        del hf  # the reference model is freed now, not when the page's run ends
        gc.collect()
    return ReferenceCheck(
        f"Hugging Face's own {name} (eager attention), loaded from the same files, ran on the "
        f"same {trace.n_tokens} tokens.", rows, name)
