"""The walkthrough's feed-forward steps for one layer, with the residual connections and norms
around them, in the encoder (post-LN) or decoder (pre-LN) order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.layers import ACTIVATION_FNS

from .steps import BTD, Shown, Walk

WINDOW = 4.0  # the activation step plots inputs in [-4, 4]: where the function bends


@dataclass(frozen=True)
class ActivationView:
    """The activation step's figure: the run's numbers whose input lies in [-window, window],
    the function's own curve there, and what the window leaves out (counts and extremes)."""
    x: np.ndarray  # [n_inside] inputs (before the activation)
    y: np.ndarray  # [n_inside] outputs
    curve_x: np.ndarray  # [n_curve]
    curve_y: np.ndarray  # [n_curve] act(curve_x)
    window: float
    total: int
    below: int  # inputs < -window
    above: int  # inputs > window
    lowest: float  # the smallest input of the run
    highest: float  # the largest


def activation_view(before: torch.Tensor, after: torch.Tensor, act: str,
                    window: float = WINDOW, n_curve: int = 201) -> ActivationView:
    """`before` and `after` are one text's numbers around the activation `act` (a name of
    model.config.ACTIVATIONS), any shape, the same for both."""
    x = before.detach().flatten().float().numpy()
    y = after.detach().flatten().float().numpy()
    if x.shape != y.shape or not x.size:
        raise ValueError(f"before and after must be non-empty and of one shape, got "
                         f"{tuple(before.shape)} and {tuple(after.shape)}")
    inside = np.abs(x) <= window
    grid = torch.linspace(-window, window, n_curve)
    curve = ACTIVATION_FNS[act](grid)
    return ActivationView(x[inside], y[inside], grid.numpy(), curve.numpy(), window, x.size,
                          int((x < -window).sum()), int((x > window).sum()),
                          float(x.min()), float(x.max()))


def _after_attention(w: Walk, layer: int) -> None:
    """How the attention output joins the stream, for each kind of block."""
    g, name = f"Layer {layer}", w.norm
    if w.block == "parallel":
        return  # nothing joins yet: the MLP reads the layer's input too (_after_mlp)
    if w.block == "sandwich":
        w.add("resid_attn", g, f"{name} again, then the residual connection",
              f"The attention output gets a {name} of its own, then is added to the layer's "
              "input: the stream keeps what it had and gains what attention found.",
              "Gemma 2 and 3 put a norm on both sides of attention and of the MLP (a "
              "'sandwich'); the stream itself is never normalized.",
              r"X_{\text{mid}} = X + \mathrm{Norm}'(\text{Attn}(\mathrm{Norm}(X)))",
              [w.shown("normalized attention output", w.names.norm(layer, "ln1_post"), BTD),
               w.shown("X + Norm'(Attn)", w.names.resid(layer, "mid"), BTD)], "values", layer)
    elif w.pre_ln:
        w.add("resid_attn", g, "Residual connection",
              "The attention output is added to the layer's input: the stream keeps what it "
              "had and gains what attention found.",
              "No norm on the stream in a pre-LN model; the next norm works on a copy.",
              r"X_{\text{mid}} = X + \text{Attn}(\mathrm{Norm}(X))",
              [w.shown("X + Attn", w.names.resid(layer, "mid"), BTD)], "values", layer)
    else:
        w.add("add_norm_attn", g, f"Add & {name}",
              f"The attention output is added to the layer's input (the residual connection), "
              f"then {name} normalizes each token's vector. Dropout before the sum does nothing "
              "at inference.",
              "BERT's post-LN order: the norm sits on the stream itself, after the sum. The "
              "residual path lets each layer refine the vectors instead of replacing them.",
              r"X_{\text{mid}} = \mathrm{Norm}(X + \text{Attn}(X))",
              [Shown("X + Attn", w.hook(w.names.resid(layer, "pre"))
                     + w.hook(w.names.out(layer, "attn")), BTD,
                     w.names.out(layer, "attn"), "`hook_resid_pre + hook_attn_out`",
                     "added to the layer's input"),
               w.shown(f"{name}(X + Attn)", w.names.resid(layer, "mid"), BTD)], "values", layer)


def mlp_steps(w: Walk, layer: int) -> None:
    cfg, g, name = w.cfg, f"Layer {layer}", w.norm
    _after_attention(w, layer)
    if not w.has(w.names.out(layer, "mlp", required=False)):  # attention-only model
        return
    up = ("batch", "pos", "d_mlp")
    if w.block == "parallel":
        w.add("ln2", g, f"{name} before the MLP",
              "A normalized copy of the layer's input goes into the feed-forward network: the "
              "same input attention read, not the stream after attention.",
              "GPT-NeoX (Pythia) runs attention and the MLP side by side on one input; both "
              "outputs are added to the stream together. The norm has its own learned weights.",
              w.norm_formula, [w.shown("normalized", w.names.norm(layer, "ln2"), BTD)], "values",
              layer)
    elif w.pre_ln:
        w.add("ln2", g, f"{name} before the MLP",
              "Pre-LN again: a normalized copy of the stream goes into the feed-forward network.",
              "The same formula as before attention, with its own learned weights.",
              w.norm_formula, [w.shown("normalized", w.names.norm(layer, "ln2"), BTD)], "values",
              layer)
    w.add("mlp_up", g, "Feed-forward: " + ("gate and up-projections" if cfg.gated_mlp else
                                           "up-projection"),
          f"{'Two linear maps widen' if cfg.gated_mlp else 'A linear map widens'} each token's "
          f"vector from {cfg.d_model} to {cfg.d_mlp} numbers"
          + (": a gate and an up-projection." if cfg.gated_mlp else "."),
          "The feed-forward network works on every token alone: tokens do not mix here. Most "
          "of a transformer's parameters live in it.",
          r"G = X W_{\text{gate}},\quad U = X W_{\text{up}}" if cfg.gated_mlp else
          r"H = X W_{\text{in}}" + (r" + b_{\text{in}}" if cfg.mlp_bias else ""),
          [w.shown("gate", w.names.mlp(layer, "pre"), up),
           w.shown("up", w.names.mlp(layer, "pre_linear"), up)]
          if cfg.gated_mlp else [w.shown("H", w.names.mlp(layer, "pre"), up)], "values", layer)
    act = {"gelu": "GELU", "gelu_new": "GELU (tanh approximation)", "relu": "ReLU",
           "silu": "SiLU"}[cfg.act]
    glu = "SwiGLU" if cfg.act == "silu" else "GeGLU"  # Gemma gates with a GELU
    w.add("mlp_act", g, "Activation: " + (glu if cfg.gated_mlp else act),
          f"{act} of the gate, multiplied number by number with the up-projection: the gate "
          "decides how much of each number passes." if cfg.gated_mlp else
          f"{act} is applied to every number: negative values are pushed to (or near) 0, "
          "positive ones pass almost unchanged.",
          "Without a non-linearity the projections would collapse into one linear map."
          + ("" if cfg.gated_mlp else " The figure plots the real numbers before and after."),
          r"\mathrm{SiLU}(G) \odot U,\quad \mathrm{SiLU}(g) = g\,\sigma(g)" if glu == "SwiGLU"
          and cfg.gated_mlp else r"\mathrm{GELU}(G) \odot U" if cfg.gated_mlp
          else r"\mathrm{GELU}(h) = h\,\Phi(h)" if cfg.act.startswith("gelu")
          else rf"\mathrm{{{act}}}(H)",
          ([] if cfg.gated_mlp else [w.shown("before", w.names.mlp(layer, "pre"), up)])
          + [w.shown("activated", w.names.mlp(layer, "post"), up)],
          "values" if cfg.gated_mlp else "activation", layer)
    w.add("mlp_down", g, "Feed-forward: down-projection",
          f"A last linear map brings each token back from {cfg.d_mlp} to {cfg.d_model} numbers.",
          "The output has the stream's shape, so it can be added to it.",
          r"\text{MLP}(X) = \mathrm{act}(\dots)\, W_{\text{out}}"
          + (r" + b_{\text{out}}" if cfg.mlp_bias else ""),
          [w.shown("MLP output", w.names.out(layer, "mlp"), BTD)], "values", layer)
    if w.block in ("parallel", "sandwich"):
        _after_parallel_or_sandwich_mlp(w, layer)
    elif w.pre_ln:
        w.add("resid_mlp", g, "Residual connection",
              "The MLP output is added to the stream. This is the layer's output.",
              "The next layer, or the final norm, reads this stream.",
              r"X^{(\ell+1)} = X_{\text{mid}} + \text{MLP}(\mathrm{Norm}(X_{\text{mid}}))",
              [w.shown("layer output", w.names.resid(layer, "post"), BTD)], "values", layer)
    else:
        w.add("add_norm_mlp", g, f"Add & {name} again",
              f"The MLP output is added to its input and {name} normalizes the sum. This is the "
              "layer's output.",
              "The same pattern as after attention: residual connection, then the norm (post-LN).",
              r"X^{(\ell+1)} = \mathrm{Norm}(X_{\text{mid}} + \text{MLP}(X_{\text{mid}}))",
              [Shown("X_mid + MLP", w.hook(w.names.resid(layer, "mid"))
                     + w.hook(w.names.out(layer, "mlp")),
                     BTD, w.names.out(layer, "mlp"), "`hook_resid_mid + hook_mlp_out`",
                     "added to the stream after attention"),
               w.shown("layer output", w.names.resid(layer, "post"), BTD)], "values", layer)


def _after_parallel_or_sandwich_mlp(w: Walk, layer: int) -> None:
    g, name = f"Layer {layer}", w.norm
    if w.block == "parallel":
        w.add("resid_mlp", g, "Residual connection: both at once",
              "The attention output and the MLP output are both added to the layer's input. "
              "This is the layer's output.",
              "Side by side, the MLP cannot read what attention found in the same layer; the "
              "next layer can.",
              r"X^{(\ell+1)} = X + \text{Attn}(\mathrm{Norm}_1(X)) + "
              r"\text{MLP}(\mathrm{Norm}_2(X))",
              [w.shown("layer output", w.names.resid(layer, "post"), BTD)], "values", layer)
        return
    w.add("resid_mlp", g, f"{name} again, then the residual connection",
          f"The MLP output gets a {name} of its own, then is added to the stream. This is the "
          "layer's output.", "The second half of the sandwich, as after attention.",
          r"X^{(\ell+1)} = X_{\text{mid}} + "
          r"\mathrm{Norm}'(\text{MLP}(\mathrm{Norm}(X_{\text{mid}})))",
          [w.shown("normalized MLP output", w.names.norm(layer, "ln2_post"), BTD),
           w.shown("layer output", w.names.resid(layer, "post"), BTD)], "values", layer)
