"""The pages a lesson step may open, and the page settings a step may set on each.

A lesson can only set what is listed here (a lesson file can never set arbitrary session
state). Each setting names the page's own widget key, its type and, for choices, the values the
page offers; tests/app/test_lessons.py checks these against the real pages.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    key: str  # the page's widget key in the session state
    kind: str  # "layer", "head", "int", "bool", "choice" or "text"
    choices: tuple[str, ...] = ()
    minimum: int = 0


ATTENTION_VIEWS = ("All heads", "Token lines", "Where a row comes from (Q·K)", "Download")

# lesson page name -> (url path, title on screen, settings)
PAGES: dict[str, tuple[str, str, dict[str, Setting]]] = {
    "attention": ("attention", "Attention", {
        "layer": Setting("attn_layer", "layer"),
        "head": Setting("attn_head", "head"),
        "view": Setting("attn_view", "choice", ATTENTION_VIEWS),
        "mode": Setting("attn_mode", "choice", ("Raw attention", "Attention rollout")),
        "average": Setting("attn_average", "bool"),
        "hide_special": Setting("attn_hide_special", "bool"),
        "cross_layer": Setting("attn_cross_layer", "layer"),  # encoder-decoder models only
        "cross_head": Setting("attn_cross_head", "head"),
    }),
    "heads": ("heads", "Head statistics", {}),
    "compare": ("compare", "Compare two inputs", {
        "text_b": Setting("cmp_text_b", "text"),
        "layer": Setting("cmp_layer", "layer"),
        "head": Setting("cmp_head", "head"),
    }),
    "walkthrough": ("walkthrough", "Forward pass, step by step", {
        "step": Setting("wk_step", "int", minimum=1),
        "layer": Setting("wk_layer", "layer"),
    }),
    "positions": ("positions", "Positional encodings", {}),
    "embeddings": ("embeddings", "Embeddings", {}),
    "logit-lens": ("logit-lens", "Logit lens", {}),
    "effect": ("effect", "Attention vs effect", {
        "layer": Setting("eff_layer", "layer"),
        "head": Setting("eff_head", "head"),
    }),
    "generate": ("generate", "Generate, step by step", {}),
    "attribution": ("attribution", "Which parts made the logit", {}),
    "patching": ("patching", "Patching: find the circuit", {}),
    "ablation": ("ablation", "Head ablation", {}),
    "training": ("training", "Train a tiny transformer", {
        "task": Setting("train_task", "choice", ("induction", "chars", "reverse")),
    }),
}

# Settings every step has, whatever its page: what the sidebar shows.
COMMON = ("model", "text", "pair")
