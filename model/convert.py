"""Hugging Face state dicts -> this project's parameter names. Pure functions, no I/O.

nn.Linear stores weights as [out, in]; our per-head attention weights are [head, d_model, d_head]
(x @ W), and GPT-2's Conv1D already stores [in, out]. Nothing is folded or fused: the
parameters keep their meaning, so the activations a user sees are the model's real ones.
"""

from __future__ import annotations

import torch

from .config import TransformerConfig

StateDict = dict[str, torch.Tensor]


def strip_prefix(sd: StateDict, anchor: str) -> StateDict:
    """Drop the wrapper prefix ('bert.', 'model.', 'transformer.', ...) found before `anchor`."""
    for key in sd:
        if key.endswith(anchor):
            prefix = key[: -len(anchor)]
            return {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}
    raise KeyError(f"the weights have no tensor named like '{anchor}'")


def in_out_to_heads(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[d_model, head*d_head] (x @ W layout) -> [head, d_model, d_head]."""
    d_model = w.shape[0]
    return w.reshape(d_model, n_heads, -1).permute(1, 0, 2).contiguous()


def linear_to_heads(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """nn.Linear weight [head*d_head, d_model] -> [head, d_model, d_head]."""
    return in_out_to_heads(w.T, n_heads)


def linear_out_to_heads(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """nn.Linear output weight [d_model, head*d_head] -> W_O [head, d_head, d_model]."""
    return w.T.reshape(n_heads, -1, w.shape[0]).contiguous()


def _copy(sd: StateDict, mapping: dict[str, str]) -> StateDict:
    return {ours: sd[theirs] for ours, theirs in mapping.items()}


# The language-model head's name: lm_head everywhere, embed_out in GPT-NeoX checkpoints
# written before transformers 5 (Pythia's on the hub).
HEAD_NAMES = ("lm_head.weight", "embed_out.weight")


def lm_head_missing(hf: StateDict, cfg: TransformerConfig) -> bool:
    """A decoder saved without its language-model head: a bare GPT2Model / LlamaModel whose
    unembedding is not tied to the token embedding, so no weights say how to predict a token."""
    return cfg.has_lm_head and not cfg.tie_embeddings and not any(n in hf for n in HEAD_NAMES)


def _unembed(hf: StateDict, out: StateDict, cfg: TransformerConfig) -> None:
    """Tied models reuse the token embedding; untied ones ship their own lm_head. A config
    without a head (see lm_head_missing) gets none."""
    if cfg.has_lm_head:
        head = next((n for n in HEAD_NAMES if n in hf), HEAD_NAMES[0])
        out["unembed.weight"] = out["embed.W_E.weight"] if cfg.tie_embeddings else hf[head]


def convert_bert(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """BERT and RoBERTa (BertModel / RobertaModel, with or without a task head)."""
    sd = strip_prefix(hf, "embeddings.word_embeddings.weight")
    h = cfg.n_heads
    out = _copy(sd, {
        "embed.W_E.weight": "embeddings.word_embeddings.weight",
        "embed.W_pos.weight": "embeddings.position_embeddings.weight",
        "embed.W_type.weight": "embeddings.token_type_embeddings.weight",
        "embed.ln.weight": "embeddings.LayerNorm.weight",
        "embed.ln.bias": "embeddings.LayerNorm.bias",
    })
    for i in range(cfg.n_layers):
        p, o = f"encoder.layer.{i}.", f"blocks.{i}."
        for ours, theirs in (("Q", "query"), ("K", "key"), ("V", "value")):
            out[o + f"attn.W_{ours}"] = linear_to_heads(sd[p + f"attention.self.{theirs}.weight"], h)
            out[o + f"attn.b_{ours}"] = sd[p + f"attention.self.{theirs}.bias"].reshape(h, -1)
        out[o + "attn.W_O"] = linear_out_to_heads(sd[p + "attention.output.dense.weight"], h)
        out.update(_copy(sd, {
            o + "attn.b_O": p + "attention.output.dense.bias",
            o + "ln1.weight": p + "attention.output.LayerNorm.weight",
            o + "ln1.bias": p + "attention.output.LayerNorm.bias",
            o + "mlp.W_in.weight": p + "intermediate.dense.weight",
            o + "mlp.W_in.bias": p + "intermediate.dense.bias",
            o + "mlp.W_out.weight": p + "output.dense.weight",
            o + "mlp.W_out.bias": p + "output.dense.bias",
            o + "ln2.weight": p + "output.LayerNorm.weight",
            o + "ln2.bias": p + "output.LayerNorm.bias",
        }))
    if cfg.has_pooler:
        out.update(_copy(sd, {"pooler.dense.weight": "pooler.dense.weight",
                              "pooler.dense.bias": "pooler.dense.bias"}))
    return out


def convert_gpt2(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """GPT-2. Its Conv1D layers store weights as [in, out], the transpose of nn.Linear."""
    sd = strip_prefix(hf, "wte.weight")
    h = cfg.n_heads
    out = _copy(sd, {"embed.W_E.weight": "wte.weight", "embed.W_pos.weight": "wpe.weight",
                     "ln_final.weight": "ln_f.weight", "ln_final.bias": "ln_f.bias"})
    for i in range(cfg.n_layers):
        p, o = f"h.{i}.", f"blocks.{i}."
        w_q, w_k, w_v = sd[p + "attn.c_attn.weight"].chunk(3, dim=1)  # each [d_model, d_model]
        b_q, b_k, b_v = sd[p + "attn.c_attn.bias"].chunk(3)
        for name, w, b in (("Q", w_q, b_q), ("K", w_k, b_k), ("V", w_v, b_v)):
            out[o + f"attn.W_{name}"] = in_out_to_heads(w, h)
            out[o + f"attn.b_{name}"] = b.reshape(h, -1)
        out[o + "attn.W_O"] = sd[p + "attn.c_proj.weight"].reshape(h, -1, cfg.d_model)
        out[o + "attn.b_O"] = sd[p + "attn.c_proj.bias"]
        out[o + "mlp.W_in.weight"] = sd[p + "mlp.c_fc.weight"].T
        out[o + "mlp.W_out.weight"] = sd[p + "mlp.c_proj.weight"].T
        out.update(_copy(sd, {
            o + "ln1.weight": p + "ln_1.weight", o + "ln1.bias": p + "ln_1.bias",
            o + "ln2.weight": p + "ln_2.weight", o + "ln2.bias": p + "ln_2.bias",
            o + "mlp.W_in.bias": p + "mlp.c_fc.bias", o + "mlp.W_out.bias": p + "mlp.c_proj.bias",
        }))
    _unembed(hf, out, cfg)
    return out


def convert_llama(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """Llama, Mistral, Qwen2, Qwen3 and Gemma 1-3: RMSNorm, rotary q/k, gated MLP,
    grouped-query attention (and the norms _llama_norms names)."""
    sd = strip_prefix(hf, "embed_tokens.weight")
    h, kv = cfg.n_heads, cfg.n_kv_heads
    out = _copy(sd, {"embed.W_E.weight": "embed_tokens.weight", "ln_final.weight": "norm.weight"})
    for i in range(cfg.n_layers):
        p, o = f"layers.{i}.", f"blocks.{i}."
        for ours, theirs, n in (("Q", "q_proj", h), ("K", "k_proj", kv), ("V", "v_proj", kv)):
            out[o + f"attn.W_{ours}"] = linear_to_heads(sd[p + f"self_attn.{theirs}.weight"], n)
            if cfg.attn_bias:
                out[o + f"attn.b_{ours}"] = sd[p + f"self_attn.{theirs}.bias"].reshape(n, -1)
        out[o + "attn.W_O"] = linear_out_to_heads(sd[p + "self_attn.o_proj.weight"], h)
        if cfg.has_out_bias:
            out[o + "attn.b_O"] = sd[p + "self_attn.o_proj.bias"]
        mapping = {
            o + "ln1.weight": p + "input_layernorm.weight",
            o + "mlp.W_gate.weight": p + "mlp.gate_proj.weight",
            o + "mlp.W_in.weight": p + "mlp.up_proj.weight",
            o + "mlp.W_out.weight": p + "mlp.down_proj.weight",
        }
        mapping.update(_llama_norms(cfg, o, p))
        if cfg.mlp_bias:
            mapping.update({o + "mlp.W_gate.bias": p + "mlp.gate_proj.bias",
                            o + "mlp.W_in.bias": p + "mlp.up_proj.bias",
                            o + "mlp.W_out.bias": p + "mlp.down_proj.bias"})
        out.update(_copy(sd, mapping))
    _unembed(hf, out, cfg)
    return out


def _llama_norms(cfg: TransformerConfig, o: str, p: str) -> dict[str, str]:
    """Llama's second norm is before the MLP; Gemma 2 and 3 have one before and one after
    attention and the MLP; Qwen3 and Gemma 3 add a norm on each head's q and k."""
    if cfg.block == "sandwich":
        mapping = {o + "ln1_post.weight": p + "post_attention_layernorm.weight",
                   o + "ln2.weight": p + "pre_feedforward_layernorm.weight",
                   o + "ln2_post.weight": p + "post_feedforward_layernorm.weight"}
    else:
        mapping = {o + "ln2.weight": p + "post_attention_layernorm.weight"}
    if cfg.qk_norm:
        mapping.update({o + "attn.q_norm.weight": p + "self_attn.q_norm.weight",
                        o + "attn.k_norm.weight": p + "self_attn.k_norm.weight"})
    return mapping


# GPT-NeoX, Phi-3, OPT and GPT-Neo: model/convert_decoders.py (loading.py joins the two)
CONVERTERS = {"bert": convert_bert, "gpt2": convert_gpt2, "llama": convert_llama}
