"""Direct logit attribution: which parts of the model wrote the logit of a token.

In a pre-LN decoder the residual stream at the last layer is a plain sum: the embeddings,
then each layer's attention output (Σ over heads of z_h W_O[h], plus the bias b_O) and MLP
output (W_out(...) plus its bias). The logit of token t is final_norm(x) · W_U[t]. The norm
is not linear, but with its scale frozen at the value it had in this run (1/σ for LayerNorm,
1/rms for RMSNorm, one number per position) it is: LayerNorm(x) = (x − mean x) · w / σ + b.
So every part c of the sum contributes c · r to the logit, with r = centred(w ⊙ W_U[t]) / σ
(no centring for RMSNorm), and the norm's bias adds b · W_U[t]. The parts add up to the
model's logit exactly (up to float rounding). This is the standard convention
(TransformerLens's `apply_ln_to_stack`); it measures each part's *direct* effect, through
the residual stream straight to the output, not what it does through later layers.

A logit difference (target − baseline) uses W_U[target] − W_U[baseline] instead of W_U[t].
Everything is read from one run through hook points; the model is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.hook_names import hook_names
from model.runner import EncoderDecoderModel

from .generation import decoder_unavailable


def attribution_unavailable(loaded) -> str | None:
    """Why direct logit attribution does not apply to `loaded`, or None."""
    why = decoder_unavailable(loaded, "Direct logit attribution")
    if why or isinstance(loaded, EncoderDecoderModel):
        return why
    cfg = loaded.cfg
    if cfg.block == "post_ln" or cfg.embed_norm:
        return ("Direct logit attribution needs a residual stream that is a plain sum of "
                f"what each part wrote; {loaded.name} normalises it inside every layer.")
    return None


@dataclass
class Attribution:
    """The logit (or logit difference) at one position, split into what wrote it.

    Every number is that part's direct contribution, through the final norm with its scale
    frozen at this run's value. `total()` adds them all and equals `value` up to rounding.
    """

    tokens: list[str]  # the text's tokens
    position: int  # the position whose next-token logits are explained
    target: int  # token id
    baseline: int | None  # token id subtracted (a logit difference), or None
    value: float  # the model's own logit (or difference) in this run; before Gemma 2's cap
    norm_scale: float  # the frozen scale: 1/σ (LayerNorm) or 1/rms (RMSNorm); 1 without a norm
    embeddings: dict[str, float]  # "token", "position" (where the model adds positions)
    heads: np.ndarray  # [layer, head]
    attn_bias: np.ndarray  # [layer], b_O (0 where the model has none)
    mlps: np.ndarray  # [layer], each MLP without its output bias (0 for attention-only)
    mlp_bias: np.ndarray  # [layer], the MLP's output bias (0 where there is none)
    norm_bias: float  # the final norm's bias (0 for RMSNorm)
    has_mlp: bool

    def total(self) -> float:
        return float(sum(self.embeddings.values()) + self.heads.sum() + self.attn_bias.sum()
                     + self.mlps.sum() + self.mlp_bias.sum() + self.norm_bias)

    def per_layer(self) -> np.ndarray:
        """[layer, 2]: each layer's attention (heads + b_O) and MLP (with its bias)."""
        return np.stack([self.heads.sum(1) + self.attn_bias, self.mlps + self.mlp_bias], 1)

    def components(self) -> list[tuple[str, float]]:
        """Every part in the order the model adds them, with a plain name."""
        out = [(f"{name} embedding", v) for name, v in self.embeddings.items()]
        for layer in range(self.heads.shape[0]):
            out += [(f"layer {layer} head {h}", float(v)) for h, v in enumerate(self.heads[layer])]
            out.append((f"layer {layer} attention bias", float(self.attn_bias[layer])))
            if self.has_mlp:
                out.append((f"layer {layer} MLP", float(self.mlps[layer])))
                out.append((f"layer {layer} MLP bias", float(self.mlp_bias[layer])))
        out.append(("final norm bias", self.norm_bias))
        return out


def _needed(cfg):
    """keep() for run_ids: only the tensors the attribution reads."""
    names = hook_names(cfg)
    wanted = {names.embed("tok"), names.embed("pos", required=False),
              names.resid(cfg.n_layers - 1, "post")}
    for layer in range(cfg.n_layers):
        wanted |= {names.attn(layer, "z"), names.out(layer, "mlp", required=False)}
    wanted.discard(None)
    return lambda name: name in wanted


def frozen_direction(model, resid: torch.Tensor, unembed_dir: torch.Tensor):
    """The residual-space direction r with (final norm with frozen scale)(x) · u = x · r + c,
    for the residual resid [d_model] of this run. Returns (r [d_model], c, scale), float64."""
    return frozen_norm(model.ln_final, resid, unembed_dir)


def frozen_norm(norm, x: torch.Tensor, direction: torch.Tensor):
    """(r, c, scale) with norm(x') · direction = x' · r + c for every x', the norm's scale
    frozen at its value for x [d_model]. A norm that subtracts the mean (LayerNorm) centres r;
    its gain (Gemma: 1 + weight) and bias come from the norm itself. float64."""
    u = direction.double()  # [d_model]
    if norm is None:
        return u, 0.0, 1.0
    x = x.double()  # [d_model]
    w = norm.gain().detach().double().cpu()  # [d_model]
    if not norm.centred:  # RMSNorm: x / rms(x) * gain
        scale = float(torch.rsqrt(x.pow(2).mean() + norm.eps))
        return w * u * scale, 0.0, scale
    scale = float(1.0 / torch.sqrt(x.var(unbiased=False) + norm.eps))  # LayerNorm: 1/σ
    wu = w * u  # [d_model]
    return (wu - wu.mean()) * scale, float(norm.bias.detach().double().cpu() @ u), scale


def head_logits(attn, z: torch.Tensor, r: torch.Tensor) -> tuple[np.ndarray, float]:
    """Per-head direct logit attribution: each head's z_h W_O[h] · r [head] and the output
    bias's b_O · r (0 without one), float64. attn: the Attention module; z: [head, d_head]
    at one position; r: [d_model], the direction the logit reads there."""
    w_o = attn.W_O.detach().double().cpu()  # [head, d_head, d_model]
    bias = 0.0 if attn.b_O is None else float(attn.b_O.detach().double().cpu() @ r)
    return (z.double() * (w_o @ r)).sum(-1).numpy(), bias  # [head]


def _check_token(token, d_vocab: int, what: str) -> int:
    if not isinstance(token, (int, np.integer)) or isinstance(token, bool) \
            or not 0 <= int(token) < d_vocab:
        raise ValueError(f"the {what} token must be a token id in [0, {d_vocab}), got {token!r}")
    return int(token)


def attribute_ids(loaded, ids, position: int = -1, target: int | None = None,
                  baseline: int | None = None) -> Attribution:
    """Direct logit attribution on token ids [pos] at `position` (negative counts from the
    end). target: default the model's predicted token there; baseline: optional, for the
    logit difference target − baseline."""
    why = attribution_unavailable(loaded)
    if why:
        raise ValueError(why)
    cfg = loaded.cfg
    trace = loaded.run_ids(torch.as_tensor(ids, dtype=torch.long).reshape(-1),
                           keep=_needed(cfg))
    return _attribute(loaded, trace, position, target, baseline)


def attribute(loaded, text: str, position: int = -1, target: int | None = None,
              baseline: int | None = None) -> Attribution:
    """`attribute_ids` on a text, tokenized as every page does."""
    why = attribution_unavailable(loaded)
    if why:
        raise ValueError(why)
    trace = loaded.run(text, keep=_needed(loaded.cfg))
    return _attribute(loaded, trace, position, target, baseline)


def _attribute(loaded, trace, position, target, baseline) -> Attribution:
    model, cfg = loaded.model, loaded.cfg
    names = hook_names(cfg)
    n_pos = trace.n_tokens
    if not isinstance(position, (int, np.integer)) or not -n_pos <= position < n_pos:
        raise ValueError(f"the position must be within the text's {n_pos} tokens, "
                         f"got {position!r}")
    pos = int(position) % n_pos
    logits = trace.logits[0, pos].double()  # [vocab]
    if cfg.final_softcap is not None:  # the parts add up to the logit before the cap
        with torch.no_grad():
            final = model.final(trace.cache[names.resid(cfg.n_layers - 1, "post")][0, pos])
            logits = model.unembed(final.to(model.unembed.weight.device)).double().cpu()
    target = int(logits.argmax()) if target is None else _check_token(target, cfg.d_vocab,
                                                                      "target")
    w_u = model.unembed.weight.detach()  # [vocab, d_model], read only
    u = w_u[target].double().cpu()  # [d_model]
    value = float(logits[target])
    if baseline is not None:
        baseline = _check_token(baseline, cfg.d_vocab, "baseline")
        if baseline == target:
            raise ValueError("the two tokens of a logit difference must differ")
        u = u - w_u[baseline].double().cpu()  # [d_model]
        value -= float(logits[baseline])
    cache = trace.cache
    resid = cache[names.resid(cfg.n_layers - 1, "post")][0, pos]  # [d_model]
    r, norm_bias, scale = frozen_direction(model, resid, u)  # [d_model], float, float
    embeddings = {"token": float(cache[names.embed("tok")][0, pos].double() @ r)}
    if names.embed("pos", required=False) in cache:
        embeddings["position"] = float(cache[names.embed("pos")][0, pos].double() @ r)
    heads, attn_bias, mlps, mlp_bias = _layer_parts(model, cache, pos, r)
    return Attribution(
        tokens=list(trace.tokens), position=pos, target=target, baseline=baseline, value=value,
        norm_scale=scale, embeddings=embeddings, heads=heads, attn_bias=attn_bias, mlps=mlps,
        mlp_bias=mlp_bias, norm_bias=norm_bias, has_mlp=not cfg.attn_only)


def _layer_parts(model, cache, pos: int, r: torch.Tensor):
    """Per layer: each head's z_h W_O[h] · r, b_O · r, (MLP out − bias) · r, bias · r."""
    n_layers, n_heads, names = model.cfg.n_layers, model.cfg.n_heads, hook_names(model.cfg)
    heads = np.zeros((n_layers, n_heads))  # [layer, head]
    attn_bias, mlps, mlp_bias = np.zeros(n_layers), np.zeros(n_layers), np.zeros(n_layers)
    for layer, block in enumerate(model.blocks):
        attn = block.attn
        z = cache[names.attn(layer, "z")][0, :, pos].double()  # [head, d_head]
        r_attn, c_attn = r, 0.0
        post = getattr(block, "ln1_post", None)  # Gemma 2/3: a norm on the attention output
        if post is not None:
            w_o = attn.W_O.detach().double().cpu()  # [head, d_head, d_model]
            b_o = 0 if attn.b_O is None else attn.b_O.detach().double().cpu()  # [d_model]
            raw = torch.einsum("hd,hdm->m", z, w_o) + b_o  # [d_model]
            r_attn, c_attn, _ = frozen_norm(post, raw, r)
        heads[layer], bias = head_logits(attn, z, r_attn)  # [head], float
        attn_bias[layer] = c_attn + bias
        if block.mlp is None:
            continue
        out = cache[names.out(layer, "mlp")][0, pos].double()  # [d_model]
        b = block.mlp.W_out.bias
        b = torch.zeros_like(out) if b is None else b.detach().double().cpu()  # [d_model]
        r_mlp, c_mlp = r, 0.0
        if getattr(block, "ln2_post", None) is not None:  # Gemma 2/3: a norm on the MLP output
            r_mlp, c_mlp, _ = frozen_norm(block.ln2_post, out, r)
        mlps[layer] = float((out - b) @ r_mlp)
        mlp_bias[layer] = float(b @ r_mlp) + c_mlp
    return heads, attn_bias, mlps, mlp_bias
