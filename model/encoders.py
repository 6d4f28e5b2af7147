"""DistilBERT and ELECTRA: BERT-style post-LN encoders whose checkpoints name or size their
parts differently. (XLM-RoBERTa is RoBERTa with another vocabulary: registry.bert_config
reads it as it is.)

Each family is a config builder (config.json -> TransformerConfig) and a converter (state dict
-> our names), both pure functions. A bad config.json raises ValueError or KeyError, which
registry.config_from_hf turns into a message naming the field.

- DistilBERT: half of BERT's layers, no segment embeddings and no pooler; its weights are
  named q_lin / k_lin / v_lin / out_lin, sa_layer_norm, ffn.lin1 / lin2, output_layer_norm.
- ELECTRA: BERT's layers, but the embeddings are narrower than the residual stream
  (embedding_size < hidden_size, e.g. 128 and 256 in electra-small) and one linear layer,
  embeddings_project, widens them; no pooler.
"""

from __future__ import annotations

from .config import TransformerConfig
from .convert import StateDict, convert_bert, linear_out_to_heads, linear_to_heads, strip_prefix


def distilbert_config(hf: dict) -> TransformerConfig:
    """DistilBertConfig (its config.json says dim, n_heads, n_layers, hidden_dim)."""
    return TransformerConfig(
        family="bert", d_model=hf["dim"], n_heads=hf["n_heads"], n_layers=hf["n_layers"],
        n_ctx=hf.get("max_position_embeddings", 512), d_vocab=hf["vocab_size"],
        d_mlp=hf["hidden_dim"], positions="learned", norm="layernorm", block="post_ln",
        act=hf.get("activation", "gelu"), causal=False, n_token_types=0,
        pad_token_id=hf.get("pad_token_id", 0),
        norm_eps=1e-12,  # fixed in DistilBERT's code, not in its config
        has_pooler=False, embed_norm=True,
    )


def electra_config(hf: dict) -> TransformerConfig:
    """ElectraConfig: BERT's fields plus embedding_size, the width of the embeddings."""
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only absolute position embeddings are supported for ELECTRA")
    d_model = hf["hidden_size"]
    d_embed = hf.get("embedding_size", d_model)
    return TransformerConfig(
        family="bert", d_model=d_model, n_heads=hf["num_attention_heads"],
        n_layers=hf["num_hidden_layers"], n_ctx=hf.get("max_position_embeddings", 512),
        d_vocab=hf["vocab_size"], d_mlp=hf["intermediate_size"], positions="learned",
        norm="layernorm", block="post_ln", act=hf.get("hidden_act", "gelu"), causal=False,
        n_token_types=hf.get("type_vocab_size", 2), pad_token_id=hf.get("pad_token_id", 0),
        norm_eps=hf.get("layer_norm_eps", 1e-12), has_pooler=False, embed_norm=True,
        d_embed=None if d_embed == d_model else d_embed,
    )


def convert_distilbert(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """DistilBertModel, or any DistilBERT with a task head (the head is left out)."""
    sd = strip_prefix(hf, "embeddings.word_embeddings.weight")
    h = cfg.n_heads
    out = {
        "embed.W_E.weight": sd["embeddings.word_embeddings.weight"],
        "embed.W_pos.weight": sd["embeddings.position_embeddings.weight"],
        "embed.ln.weight": sd["embeddings.LayerNorm.weight"],
        "embed.ln.bias": sd["embeddings.LayerNorm.bias"],
    }
    for i in range(cfg.n_layers):
        p, o = f"transformer.layer.{i}.", f"blocks.{i}."
        for ours, theirs in (("Q", "q_lin"), ("K", "k_lin"), ("V", "v_lin")):
            out[o + f"attn.W_{ours}"] = linear_to_heads(sd[p + f"attention.{theirs}.weight"], h)
            out[o + f"attn.b_{ours}"] = sd[p + f"attention.{theirs}.bias"].reshape(h, -1)
        out[o + "attn.W_O"] = linear_out_to_heads(sd[p + "attention.out_lin.weight"], h)
        out[o + "attn.b_O"] = sd[p + "attention.out_lin.bias"]
        for ours, theirs in (("ln1", "sa_layer_norm"), ("ln2", "output_layer_norm"),
                             ("mlp.W_in", "ffn.lin1"), ("mlp.W_out", "ffn.lin2")):
            out[o + ours + ".weight"] = sd[p + theirs + ".weight"]
            out[o + ours + ".bias"] = sd[p + theirs + ".bias"]
    return out


def convert_electra(hf: StateDict, cfg: TransformerConfig) -> StateDict:
    """ElectraModel, or the discriminator / generator with its head (left out): BERT's names,
    plus embeddings_project when the embeddings are narrower than the residual stream."""
    out = convert_bert(hf, cfg)
    if cfg.d_embed is not None:
        sd = strip_prefix(hf, "embeddings.word_embeddings.weight")
        out["embed.project.weight"] = sd["embeddings_project.weight"]
        out["embed.project.bias"] = sd["embeddings_project.bias"]
    return out


# model_type in config.json -> builder / converter (registry.py and loading.py read these)
ENCODER_BUILDERS = {"distilbert": distilbert_config, "electra": electra_config}
ENCODER_CONVERTERS = {"distilbert": convert_distilbert, "electra": convert_electra}
