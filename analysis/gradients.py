"""Gradient methods over the input tokens: gradient × input and integrated gradients.

The "input" of token p is its token embedding x_p = W_E[id_p] (times √d_model where the model
scales it): the `embed.hook_tok` tensor, [pos, d_model]. Positions and token types are added
afterwards and are not attributed.

- Gradient × input (e.g. Shrikumar et al., 2017): a_p = ∂target/∂x_p · x_p.
- Integrated gradients (Sundararajan et al., 2017), from a baseline x' (every token's
  embedding replaced by the embedding of the padding token, by default; or by zeros, or by
  the embedding of [MASK]):
  a_p = (x_p − x'_p) · ∫₀¹ ∂target/∂x_p (x' + α(x − x')) dα.
  The integral is a Gauss–Legendre sum over `steps` points of α (Captum's default rule). The
  points run in chunks, each one forward and one backward pass over a batch of points, as
  many points per chunk as fit the working-memory allowance (analysis/cost.py; the sum is the
  same however they are chunked). Completeness: Σ_p a_p equals target(x) − target(x') up to
  the error of that sum, which `IGResult.gap` reports (`gap_share`: as a share of the change).

Why the padding token and not zeros by default: where nothing is added to the token vectors
before the first norm (Llama, Mistral, Gemma, Qwen: rotary positions act inside attention),
zero vectors make the whole residual stream exactly zero, and RMSNorm(αx) = αx / √(α²·ms(x)
+ ε) leaps from 0 to its full size within α ≈ √(ε / ms(x)) of the start (3e-3 on the tiny
test Llama). The integrand is a spike there that no affordable number of points resolves: on
that Llama the sum missed up to 190% of the change at 64 steps and up to 150% at 256 (Captum
gives the same numbers). From the padding token every point of the path is a mix of two real
token vectors, of ordinary size, and the sum adds up (≤ 0.06% at 64 steps there).
`zero_start_is_empty` says whether a model is one of those. A model whose tokenizer has no padding token (the project's
own character models: positions are added before their first norm, so zeros are fine there)
starts from zeros (`default_baseline`).

The shared model is never changed: the embeddings are a copy made for this call, gradients are
taken with `torch.autograd.grad` with respect to that copy only (nothing is accumulated in any
parameter's `.grad`, no `requires_grad` flag is set or cleared on the model), and the
replacement goes through the `hooks(...)` context, which only the calling thread sees. Two
users can run this at the same time on one model.

Bounds, checked before any work and never cut silently (a ValueError says the bound):
MAX_GRADIENT_TOKENS tokens for both methods; at most MAX_IG_STEPS steps; and integrated
gradients take at most MAX_IG_BATCH_TOKENS token-steps (steps × tokens the target sees: 64
steps × 128 tokens), a bound on time. Memory is bounded by the chunks instead: in one batch
the activations kept for the backward pass peaked at 2.5 GB at 64 × 128 for all-MiniLM-L6-v2
(attention grows with tokens²); a chunk's estimate stays within `allowance` bytes.
A decoder's target sees only the tokens up to its position; only those run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from analysis import cost
from analysis.ablation import Inputs
from analysis.effect_target import (
    Target, check_model, prefix, score, special_token_id, visible_length,
)
from model.hook_names import hook_names
from model.hooks import caching_hook, hooks

MAX_GRADIENT_TOKENS = 512  # gradient × input and integrated gradients
MAX_IG_STEPS = 256
MAX_IG_BATCH_TOKENS = 64 * 128  # steps × tokens of integrated gradients in all
BASELINES = ("pad", "zero", "mask")
DEFAULT_BASELINE = "pad"  # the padding token; "zero" where the tokenizer has none
GAP_WARN_SHARE = 0.05  # a sum that misses more than 5% of the change is flagged on the page


def check_gradient_bounds(n_tokens: int, steps: int | None = None) -> None:
    """ValueError, saying the bound, when a text is too long for the gradient methods or
    integrated gradients would need too many steps (or too big a batch)."""
    if n_tokens > MAX_GRADIENT_TOKENS:
        raise ValueError(f"gradients are computed for at most {MAX_GRADIENT_TOKENS} tokens; "
                         f"this text has {n_tokens}")
    if steps is None:
        return
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= MAX_IG_STEPS:
        raise ValueError(f"integrated gradients take 1 to {MAX_IG_STEPS} steps, got {steps!r}")
    if steps * n_tokens > MAX_IG_BATCH_TOKENS:
        most = MAX_IG_BATCH_TOKENS // n_tokens
        raise ValueError(
            f"integrated gradients compute at most {MAX_IG_BATCH_TOKENS:,} token-steps "
            f"(steps × tokens); {steps} steps × {n_tokens} tokens "
            f"is {steps * n_tokens:,}. Use at most {most} steps for this text, or a shorter text.")


def token_embeddings(loaded, inputs: Inputs, fill_id: int | None = None) -> torch.Tensor:
    """A copy of the token embeddings the model would use: [1, pos, d_model] on its device.
    With fill_id, every token is that id instead (a [PAD] or [MASK] baseline)."""
    ids = inputs.input_ids if fill_id is None else torch.full_like(inputs.input_ids, fill_id)
    store: dict[str, torch.Tensor] = {}
    model, tok = loaded.model, hook_names(loaded.cfg).embed("tok")
    with torch.no_grad(), hooks(model.hook_names, [(tok, caching_hook(store))]):
        model.embed(ids.to(loaded.device), inputs.token_type_ids.to(loaded.device))
    return store[tok].clone()  # [1, pos, d_model]


def baseline_embeddings(loaded, inputs: Inputs, baseline: str) -> torch.Tensor:
    """x' [1, pos, d_model]: zeros, or the embedding of [PAD] / [MASK] at every position."""
    if baseline not in BASELINES:
        raise ValueError(f"the baseline must be one of {BASELINES}, got {baseline!r}")
    if baseline == "zero":
        return torch.zeros_like(token_embeddings(loaded, inputs))
    return token_embeddings(loaded, inputs, special_token_id(loaded, baseline))


def default_baseline(loaded) -> str:
    """"pad" (every token replaced by the padding token) where the tokenizer has one, else
    "zero"."""
    try:
        special_token_id(loaded, DEFAULT_BASELINE)
    except ValueError:
        return "zero"
    return DEFAULT_BASELINE


def zero_start_is_empty(loaded) -> bool:
    """True when zero token vectors leave the model's first layer nothing at all: the whole
    embedding (positions and token types included) is exactly zero, as in Llama-style models.
    Integrated gradients from zeros do not add up there, however many steps."""
    inputs = Inputs(torch.zeros(1, 2, dtype=torch.long), torch.ones(1, 2, dtype=torch.long),
                    torch.zeros(1, 2, dtype=torch.long))
    zeros = torch.zeros_like(token_embeddings(loaded, inputs))  # [1, 2, d_model]
    model = loaded.model
    with torch.no_grad(), hooks(model.hook_names, [("embed.hook_tok", lambda x, name: zeros)]):
        x = model.embed(inputs.input_ids.to(loaded.device),
                        inputs.token_type_ids.to(loaded.device))  # [1, 2, d_model]
    return bool((x == 0).all())


def _padded(values: torch.Tensor, n_pos: int) -> np.ndarray:
    """[k] -> float64 [n_pos], zeros after k: tokens a decoder's target cannot see."""
    out = np.zeros(n_pos)
    out[: values.shape[0]] = values.detach().double().cpu().numpy()
    return out


def gradient_x_input(loaded, target: Target, inputs: Inputs) -> np.ndarray:
    """∂target/∂x_p · x_p for every token p: float64 [pos] (0 after a decoder's position)."""
    check_model(loaded)
    n_pos = inputs.input_ids.shape[1]
    check_gradient_bounds(n_pos)
    seen = prefix(inputs, visible_length(target, n_pos))
    x = token_embeddings(loaded, seen).requires_grad_(True)  # [1, k, d_model], our copy
    with torch.enable_grad():
        y = score(loaded, target, seen.input_ids, seen.attention_mask, seen.token_type_ids,
                  tok=x)  # [1]
        (grad,) = torch.autograd.grad(y.sum(), x)  # [1, k, d_model]
    return _padded((grad * x.detach()).sum(-1)[0], n_pos)  # [pos]


def gauss_legendre(steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Points α in (0, 1) and weights (summing to 1) of the Gauss–Legendre rule: [steps] each."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return torch.from_numpy(0.5 * (nodes + 1)), torch.from_numpy(0.5 * weights)


@dataclass
class IGResult:
    """Integrated gradients for one text and target."""

    attributions: np.ndarray  # float64 [pos], 0 after a decoder's position
    value: float  # target(x)
    baseline_value: float  # target(x')
    baseline: str  # "pad", "zero" or "mask"
    steps: int

    @property
    def change(self) -> float:
        """target(x) − target(x'): what the attributions should add up to."""
        return self.value - self.baseline_value

    @property
    def gap(self) -> float:
        """Σ attributions − (target(x) − target(x')): what the sum over steps missed."""
        return float(self.attributions.sum()) - self.change

    @property
    def gap_share(self) -> float:
        """|gap| / |change|: 0.01 means the sum misses 1% of the change. NaN when the target
        did not move at all (nothing to share out; the gap is then the whole story)."""
        if abs(self.change) < 1e-12:
            return float("nan")
        return abs(self.gap) / abs(self.change)

    @property
    def adds_up(self) -> bool:
        """The sum is within GAP_WARN_SHARE of the change (or, with no change, within 1e-4)."""
        share = self.gap_share
        return abs(self.gap) < 1e-4 if share != share else share <= GAP_WARN_SHARE


def ig_chunk(cfg, n_tokens: int, steps: int, allowance: int | None = None) -> int:
    """Points of the path per forward + backward pass: as many as fit `allowance` bytes
    (default cost.DEFAULT_ALLOWANCE), at least one."""
    return cost.chunk("integrated_gradients", cfg, n_tokens, steps, allowance)


def integrated_gradients(loaded, target: Target, inputs: Inputs, baseline: str | None = None,
                         steps: int = 64, allowance: int | None = None,
                         chunk: int | None = None) -> IGResult:
    """Integrated gradients from `baseline` (default: `default_baseline`) with `steps` points,
    `chunk` points per pass (default: as many as fit `allowance` bytes, `ig_chunk`)."""
    check_model(loaded)
    baseline = baseline or default_baseline(loaded)
    n_pos = inputs.input_ids.shape[1]
    k = visible_length(target, n_pos)
    check_gradient_bounds(k, steps)
    seen = prefix(inputs, k)
    args = (seen.input_ids, seen.attention_mask, seen.token_type_ids)
    x = token_embeddings(loaded, seen)  # [1, k, d_model]
    base = baseline_embeddings(loaded, seen, baseline)  # [1, k, d_model]
    chunk = chunk or ig_chunk(loaded.cfg, k, steps, allowance)
    alphas, weights = gauss_legendre(steps)  # [steps]
    mean_grad = torch.zeros(x.shape[1:], dtype=torch.float64, device=x.device)  # [k, d_model]
    for start in range(0, steps, chunk):
        a = alphas[start:start + chunk].to(x.device, x.dtype)[:, None, None]  # [b, 1, 1]
        path = (base + a * (x - base)).requires_grad_(True)  # [b, k, d_model]
        with torch.enable_grad():
            y = score(loaded, target, *args, tok=path)  # [b]
            (grad,) = torch.autograd.grad(y.sum(), path)  # [b, k, d_model]
        w = weights[start:start + chunk].to(grad.device)[:, None, None]  # [b, 1, 1], float64
        mean_grad += (w * grad.double()).sum(0)  # [k, d_model]
        del path, y, grad  # this chunk's activations go before the next one's
    attributions = ((x - base)[0].double() * mean_grad).sum(-1)  # [k]
    with torch.no_grad():
        ends = score(loaded, target, *args, tok=torch.cat([x, base]))  # [2]
    return IGResult(_padded(attributions, n_pos), float(ends[0]), float(ends[1]), baseline,
                    steps)
