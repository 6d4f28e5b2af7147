"""Direct logit attribution in the decoder of an encoder–decoder (BART, Marian, T5; and
tiny-reverse, a pre-norm decoder like T5's with LayerNorm and learned positions).

The logit of token t at decoder position p is split into what wrote it: the decoder's token
(and position) embeddings, every self-attention head, every cross-attention head (the heads
that read the source), every MLP, the biases, and the logits' own bias.

- T5's decoder is pre-norm: its residual stream is a plain sum, read at the end through the
  final RMSNorm (its scale frozen at this run's value, as analysis/attribution.py does) and,
  when the head is tied to the embeddings, multiplied by d_model ** -0.5.
- BART and Marian are post-norm: a LayerNorm follows every part. With each norm's scale frozen
  at this run's value, every norm is a fixed affine map, so the logit is still an exact sum:
  the direction the logit reads is carried back through each norm in turn (centred, times its
  gain, divided by its spread), and each norm's bias is a part of its own. A part's number is
  its direct effect through the later norms with their scales held, not what it changes in
  later layers.

The parts add up to the model's own logit up to float rounding. Read from one run through
hook points; the model is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.run import encode_source, run_with_hooks

from .attribution import _check_token, frozen_norm, head_logits
from .seq2seq_runs import as_row, decoder_names, is_seq2seq, out_scale


@dataclass
class Seq2SeqAttribution:
    """One decoder position's logit (or logit difference), split into what wrote it."""

    tokens: list[str]  # the decoder's input tokens (the start token, then the output)
    position: int  # the decoder position whose next-token logits are explained
    target: int
    baseline: int | None
    value: float  # the model's own logit (or difference) in this run
    norm_scale: float | None  # T5: the final norm's frozen 1/rms; post-norm models: None
    out_scale: float  # T5 with a tied head: d_model ** -0.5; otherwise 1
    embeddings: dict[str, float]  # "token", "position" (BART, Marian)
    self_heads: np.ndarray  # [layer, head], the decoder's self-attention heads
    self_bias: np.ndarray  # [layer], self-attention's output bias
    cross_heads: np.ndarray  # [layer, head], the heads that read the source
    cross_bias: np.ndarray  # [layer]
    mlps: np.ndarray  # [layer], each MLP without its output bias
    mlp_bias: np.ndarray  # [layer]
    norm_bias: np.ndarray  # [layer], the biases of that layer's norms (post-norm models)
    embed_norm_bias: float  # BART: the bias of the norm after the embeddings
    logits_bias: float  # BART, Marian: the bias added to the logits
    post_norm: bool
    final_norm_bias: float = 0.0  # tiny-reverse: the final LayerNorm's bias (T5's has none)

    has_mlp = True

    @property
    def heads(self) -> np.ndarray:
        """[layer, head]: self-attention heads (what the decoder-only pages call heads)."""
        return self.self_heads

    def total(self) -> float:
        return float(sum(self.embeddings.values()) + self.self_heads.sum() + self.self_bias.sum()
                     + self.cross_heads.sum() + self.cross_bias.sum() + self.mlps.sum()
                     + self.mlp_bias.sum() + self.norm_bias.sum() + self.embed_norm_bias
                     + self.final_norm_bias + self.logits_bias)

    def per_layer(self) -> np.ndarray:
        """[layer, 3]: each layer's self-attention, cross-attention and MLP, biases included."""
        return np.stack([self.self_heads.sum(1) + self.self_bias,
                         self.cross_heads.sum(1) + self.cross_bias, self.mlps + self.mlp_bias], 1)

    def components(self) -> list[tuple[str, float]]:
        """Every part in the order the model adds them, with a plain name."""
        out = [(f"{name} embedding", v) for name, v in self.embeddings.items()]
        if self.post_norm:
            out.append(("norm after the embeddings: bias", self.embed_norm_bias))
        for layer in range(self.self_heads.shape[0]):
            for what, heads, bias in (("self-attention", self.self_heads, self.self_bias),
                                      ("cross-attention", self.cross_heads, self.cross_bias)):
                out += [(f"layer {layer} {what} head {h}", float(v))
                        for h, v in enumerate(heads[layer])]
                out.append((f"layer {layer} {what} bias", float(bias[layer])))
            out.append((f"layer {layer} MLP", float(self.mlps[layer])))
            out.append((f"layer {layer} MLP bias", float(self.mlp_bias[layer])))
            if self.post_norm:
                out.append((f"layer {layer} norms' biases", float(self.norm_bias[layer])))
        out.append(("final norm's bias", self.final_norm_bias))
        out.append(("logits' bias", self.logits_bias))
        return out


def _keep(loaded):
    names = decoder_names(loaded)
    wanted = {names.embed("tok"), names.embed("pos", required=False),
              names.embed("sum", required=False)}
    for layer in range(loaded.model.dec_cfg.n_layers):
        wanted |= {names.resid(layer, w) for w in ("pre", "mid", "cross", "post")}
        wanted |= {names.attn(layer, "z"), names.cross_attn(layer, "z"),
                   names.out(layer, "attn"), names.out(layer, "cross"), names.out(layer, "mlp")}
    wanted.discard(None)
    return wanted.__contains__


def _mlp(block, out: torch.Tensor, r: torch.Tensor) -> tuple[float, float]:
    b = block.mlp.W_out.bias
    b = torch.zeros_like(out) if b is None else b.detach().double().cpu()  # [d_model]
    return float((out - b) @ r), float(b @ r)


def _final_direction(dec, resid: torch.Tensor, u: torch.Tensor):
    """(r, c, scale): the direction in the last residual stream that the logit reads, and the
    final norm's bias part (0 for RMSNorm or no final norm)."""
    u = u * out_scale(dec)  # [d_model]; T5's tied head scales the output first
    if dec.ln_final is None:
        return u, 0.0, None
    return frozen_norm(dec.ln_final, resid, u)


def _walk_back(dec, cache, names, pos: int, r: torch.Tensor, a: Seq2SeqAttribution):
    """Fill a's per-layer parts from the last layer back; returns r at the embeddings."""
    def at(name):
        return cache[name][0, pos].double().cpu()  # [d_model]

    for layer in reversed(range(dec.cfg.n_layers)):
        block = dec.blocks[layer]
        post = a.post_norm
        mlp_out = at(names.out(layer, "mlp"))
        if post:  # resid_post = ln2(resid_cross + mlp_out)
            r, c, _ = frozen_norm(block.ln2, at(names.resid(layer, "cross")) + mlp_out, r)
            a.norm_bias[layer] += c
        a.mlps[layer], a.mlp_bias[layer] = _mlp(block, mlp_out, r)
        if post:  # resid_cross = ln_cross(resid_mid + cross_out)
            y = at(names.resid(layer, "mid")) + at(names.out(layer, "cross"))
            r, c, _ = frozen_norm(block.ln_cross, y, r)
            a.norm_bias[layer] += c
        z = cache[names.cross_attn(layer, "z")][0, :, pos]  # [head, d_head]
        a.cross_heads[layer], a.cross_bias[layer] = head_logits(block.cross_attn, z, r)
        if post:  # resid_mid = ln1(resid_pre + attn_out)
            y = at(names.resid(layer, "pre")) + at(names.out(layer, "attn"))
            r, c, _ = frozen_norm(block.ln1, y, r)
            a.norm_bias[layer] += c
        z = cache[names.attn(layer, "z")][0, :, pos]  # [head, d_head]
        a.self_heads[layer], a.self_bias[layer] = head_logits(block.attn, z, r)
    return r


def attribute_seq2seq(loaded, src_ids, dec_ids, position: int = -1, target: int | None = None,
                      baseline: int | None = None) -> Seq2SeqAttribution:
    """Direct logit attribution at decoder position `position` of the decoder reading dec_ids
    [out_pos] (teacher forcing: its start token, then an output) over the source src_ids
    [src_pos]. target: default the model's top token there; baseline: optional, for the logit
    difference target − baseline."""
    if not is_seq2seq(loaded):
        raise ValueError("this attribution is for encoder–decoders")
    model, dec_cfg = loaded.model, loaded.model.dec_cfg
    dec = model.decoder
    src = as_row(src_ids, model.cfg.d_vocab, "source", loaded.device)
    out_ids = as_row(dec_ids, dec_cfg.d_vocab, "decoder's input", loaded.device)
    if out_ids.shape[1] > dec_cfg.n_ctx:
        raise ValueError(f"the decoder reads at most {dec_cfg.n_ctx} tokens")
    n = out_ids.shape[1]
    if not isinstance(position, (int, np.integer)) or not -n <= position < n:
        raise ValueError(f"the position must be within the decoder's {n} tokens, got "
                         f"{position!r}")
    pos = int(position) % n
    names = decoder_names(loaded)
    memory, memory_mask = encode_source(loaded, src)
    logits, cache = run_with_hooks(loaded, out_ids, stack="decoder", memory=memory,
                                   memory_mask=memory_mask, keep=_keep(loaded))
    logits = logits[0, pos].double().cpu()  # [vocab]
    target = int(logits.argmax()) if target is None else _check_token(target, dec_cfg.d_vocab,
                                                                      "target")
    w_u = dec.unembed.weight.detach()  # [vocab, d_model], read only
    u, value = w_u[target].double().cpu(), float(logits[target])  # [d_model]
    b_u = getattr(dec, "b_U", None)  # BART, Marian
    b_u = None if b_u is None else b_u.detach().double().cpu()  # [vocab]
    logits_bias = 0.0 if b_u is None else float(b_u[target])
    if baseline is not None:
        baseline = _check_token(baseline, dec_cfg.d_vocab, "baseline")
        if baseline == target:
            raise ValueError("the two tokens of a logit difference must differ")
        u, value = u - w_u[baseline].double().cpu(), value - float(logits[baseline])
        logits_bias -= 0.0 if b_u is None else float(b_u[baseline])
    last = cache[names.resid(dec_cfg.n_layers - 1, "post")][0, pos].double().cpu()  # [d_model]
    r, final_bias, scale = _final_direction(dec, last, u)
    n_layers, n_heads = dec_cfg.n_layers, dec_cfg.n_heads
    zeros = np.zeros(n_layers)
    a = Seq2SeqAttribution(
        tokens=loaded.tokenizer.tokens(out_ids[0].tolist()), position=pos, target=target,
        baseline=baseline, value=value, norm_scale=scale, out_scale=out_scale(dec),
        embeddings={}, self_heads=np.zeros((n_layers, n_heads)), self_bias=zeros.copy(),
        cross_heads=np.zeros((n_layers, n_heads)), cross_bias=zeros.copy(), mlps=zeros.copy(),
        mlp_bias=zeros.copy(), norm_bias=zeros.copy(), embed_norm_bias=0.0,
        logits_bias=logits_bias, post_norm=dec_cfg.block == "post_ln",
        final_norm_bias=final_bias)
    r = _walk_back(dec, cache, names, pos, r, a)
    embed_norm = getattr(dec.embed, "ln", None)
    if embed_norm is not None:  # BART: a LayerNorm on the embedding sum
        r, a.embed_norm_bias, _ = frozen_norm(
            embed_norm, cache[names.embed("sum")][0, pos].double().cpu(), r)
    a.embeddings["token"] = float(cache[names.embed("tok")][0, pos].double().cpu() @ r)
    pos_name = names.embed("pos", required=False)
    if pos_name is not None and pos_name in cache:
        a.embeddings["position"] = float(cache[pos_name][0, pos].double().cpu() @ r)
    return a
