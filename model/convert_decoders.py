"""Hugging Face state dicts -> ours for GPT-NeoX (Pythia), Phi-3, OPT and GPT-Neo. Pure
functions, no I/O, as in convert.py (whose helpers they use).

GPT-NeoX and Phi-3 fuse weights that we keep apart: NeoX's query_key_value interleaves q, k
and v per head ([head, 3, d_head] rows), Phi-3's qkv_proj stacks all q rows, then k, then v,
and its gate_up_proj stacks the gate's rows above the up-projection's. Splitting them changes
no number, so every head's q, k and v can be read on its own.
"""

from __future__ import annotations


from .config import TransformerConfig
from .convert import (
    StateDict, _copy, _unembed, linear_out_to_heads, linear_to_heads, strip_prefix,
)


def _linear(o: str, p: str, bias: bool = True) -> dict[str, str]:
    """ours.weight/.bias <- theirs.weight/.bias for one nn.Linear kept as nn.Linear."""
    return {o + ".weight": p + ".weight", **({o + ".bias": p + ".bias"} if bias else {})}


def _layer_norm(o: str, p: str) -> dict[str, str]:
    return _linear(o, p, bias=True)


def convert_neox(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """GPT-NeoX / Pythia: fused per-head q, k, v; LayerNorms; a GELU MLP with biases."""
    sd = strip_prefix(hf, "embed_in.weight")
    h, dh, d = cfg.n_heads, cfg.d_head, cfg.d_model
    out = _copy(sd, {"embed.W_E.weight": "embed_in.weight", **_layer_norm(
        "ln_final", "final_layer_norm")})
    for i in range(cfg.n_layers):
        p, o = f"layers.{i}.", f"blocks.{i}."
        w = sd[p + "attention.query_key_value.weight"].reshape(h, 3, dh, d)  # rows per head
        for j, name in enumerate("QKV"):
            out[o + f"attn.W_{name}"] = w[:, j].transpose(1, 2).contiguous()  # [head, d, d_head]
        if cfg.attn_bias:
            b = sd[p + "attention.query_key_value.bias"].reshape(h, 3, dh)
            for j, name in enumerate("QKV"):
                out[o + f"attn.b_{name}"] = b[:, j].contiguous()
        out[o + "attn.W_O"] = linear_out_to_heads(sd[p + "attention.dense.weight"], h)
        mapping = {**_layer_norm(o + "ln1", p + "input_layernorm"),
                   **_layer_norm(o + "ln2", p + "post_attention_layernorm"),
                   **_linear(o + "mlp.W_in", p + "mlp.dense_h_to_4h"),
                   **_linear(o + "mlp.W_out", p + "mlp.dense_4h_to_h")}
        if cfg.has_out_bias:
            mapping[o + "attn.b_O"] = p + "attention.dense.bias"
        out.update(_copy(sd, mapping))
    _unembed(hf, out, cfg)
    return out


def convert_phi3(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """Phi-3: Llama's layout with qkv_proj and gate_up_proj fused."""
    sd = strip_prefix(hf, "embed_tokens.weight")
    h, kv, dh = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    out = _copy(sd, {"embed.W_E.weight": "embed_tokens.weight", "ln_final.weight": "norm.weight"})
    for i in range(cfg.n_layers):
        p, o = f"layers.{i}.", f"blocks.{i}."
        w_q, w_k, w_v = sd[p + "self_attn.qkv_proj.weight"].split([h * dh, kv * dh, kv * dh])
        for name, w, n in (("Q", w_q, h), ("K", w_k, kv), ("V", w_v, kv)):
            out[o + f"attn.W_{name}"] = linear_to_heads(w, n)
        out[o + "attn.W_O"] = linear_out_to_heads(sd[p + "self_attn.o_proj.weight"], h)
        gate, up = sd[p + "mlp.gate_up_proj.weight"].chunk(2, dim=0)  # gate rows come first
        out[o + "mlp.W_gate.weight"], out[o + "mlp.W_in.weight"] = gate, up
        out.update(_copy(sd, {o + "ln1.weight": p + "input_layernorm.weight",
                              o + "ln2.weight": p + "post_attention_layernorm.weight",
                              o + "mlp.W_out.weight": p + "mlp.down_proj.weight"}))
    _unembed(hf, out, cfg)
    return out


def _separate_qkv(sd: StateDict, out: StateDict, cfg: TransformerConfig, p: str, o: str,
                  bias: bool) -> None:
    """q_proj, k_proj, v_proj, out_proj (OPT, GPT-Neo) -> per-head W_Q, W_K, W_V, W_O."""
    h = cfg.n_heads
    for ours, theirs in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj")):
        out[o + f"attn.W_{ours}"] = linear_to_heads(sd[p + f"{theirs}.weight"], h)
        if bias:
            out[o + f"attn.b_{ours}"] = sd[p + f"{theirs}.bias"].reshape(h, -1)
    out[o + "attn.W_O"] = linear_out_to_heads(sd[p + "out_proj.weight"], h)
    if cfg.has_out_bias:
        out[o + "attn.b_O"] = sd[p + "out_proj.bias"]


def convert_opt(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """OPT: pre-LN, nn.Linear everywhere, positions offset by 2 (the table has 2 extra rows)."""
    sd = strip_prefix(hf, "embed_tokens.weight")
    out = _copy(sd, {"embed.W_E.weight": "embed_tokens.weight",
                     "embed.W_pos.weight": "embed_positions.weight",
                     **_layer_norm("ln_final", "final_layer_norm")})
    for i in range(cfg.n_layers):
        p, o = f"layers.{i}.", f"blocks.{i}."
        _separate_qkv(sd, out, cfg, p + "self_attn.", o, cfg.attn_bias)
        out.update(_copy(sd, {**_layer_norm(o + "ln1", p + "self_attn_layer_norm"),
                              **_layer_norm(o + "ln2", p + "final_layer_norm"),
                              **_linear(o + "mlp.W_in", p + "fc1", cfg.mlp_bias),
                              **_linear(o + "mlp.W_out", p + "fc2", cfg.mlp_bias)}))
    _unembed(hf, out, cfg)
    return out


def convert_gpt_neo(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """GPT-Neo: GPT-2's names, but nn.Linear weights and separate q, k, v without biases."""
    sd = strip_prefix(hf, "wte.weight")
    out = _copy(sd, {"embed.W_E.weight": "wte.weight", "embed.W_pos.weight": "wpe.weight",
                     **_layer_norm("ln_final", "ln_f")})
    for i in range(cfg.n_layers):
        p, o = f"h.{i}.", f"blocks.{i}."
        _separate_qkv(sd, out, cfg, p + "attn.attention.", o, bias=False)
        out.update(_copy(sd, {**_layer_norm(o + "ln1", p + "ln_1"),
                              **_layer_norm(o + "ln2", p + "ln_2"),
                              **_linear(o + "mlp.W_in", p + "mlp.c_fc"),
                              **_linear(o + "mlp.W_out", p + "mlp.c_proj")}))
    _unembed(hf, out, cfg)
    return out


DECODER_CONVERTERS: dict[str, object] = {
    "neox": convert_neox, "phi3": convert_phi3, "opt": convert_opt, "gpt_neo": convert_gpt_neo,
}
