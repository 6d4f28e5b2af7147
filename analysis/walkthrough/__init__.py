"""The forward pass as a classroom walkthrough, stage by stage (see steps.py)."""

from __future__ import annotations

from model.trace import Trace

from .attention import attention_steps
from .inputs import embedding_steps, input_steps
from .mlp import mlp_steps
from .output import end_steps, stack_step
from .steps import Preview, Shown, Step, Walk, keep, preview, top_tokens

__all__ = ["Preview", "Shown", "Step", "keep", "preview", "top_tokens", "walkthrough"]


def walkthrough(trace: Trace, layer: int = 0) -> list[Step]:
    """Every step of the forward pass of `trace` (a full trace: run with keep=None, or with
    `keep`, which leaves out q·k and the scores: they are derived for the layer shown), with the
    layer steps for `layer`, in the encoder (post-LN) or decoder (pre-LN) order."""
    if not 0 <= layer < trace.cfg.n_layers:
        raise ValueError(f"layer must be in [0, {trace.cfg.n_layers - 1}], got {layer}")
    w = Walk(trace)
    input_steps(w)
    embedding_steps(w)
    attention_steps(w, layer)
    mlp_steps(w, layer)
    stack_step(w)
    end_steps(w)
    return w.steps
