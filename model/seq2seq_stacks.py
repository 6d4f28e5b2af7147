"""BART, Marian and T5 as a Seq2SeqTransformer: the EncoderDecoder of seq2seq.py (same hook
names, same greedy decoding, same cross-attention views) with each family's embeddings, blocks
and position scheme. The weights come from model/seq2seq_families.py's converters.

T5 has no position embeddings. Each stack owns one `rel_bias`: a learned number per head for
each bucket of distance (key position - query position), added to every attention score of
every layer of that stack, read as `rel_bias.hook_bias` [1, head, q_pos, k_pos]. It rides in
the additive mask each block already takes, so the layers are the ordinary ones.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import attention_mask_bias
from .blocks import make_block, norm_recipe, same
from .config import TransformerConfig
from .hooks import HookPoint, name_hook_points
from .layers import LayerNorm, make_norm
from .seq2seq import DecoderBlock, EncoderDecoder
from .seq2seq_families import Seq2SeqSpec
from .transformer import ModelOutput


def relative_bucket(rel: torch.Tensor, bidirectional: bool, n_buckets: int,
                    max_distance: int) -> torch.Tensor:
    """T5's bucket of each distance rel = key_pos - query_pos (Mesh TensorFlow's rule): exact
    buckets for small distances, logarithmically wider ones up to max_distance, one past it.
    Bidirectional (the encoder): keys after the query get the upper half of the buckets."""
    buckets = torch.zeros_like(rel)
    if bidirectional:
        n_buckets //= 2
        buckets = buckets + (rel > 0).long() * n_buckets
        rel = rel.abs()
    else:
        rel = -torch.clamp(rel, max=0)  # the decoder sees only keys at or before the query
    exact = n_buckets // 2
    large = exact + (torch.log(rel.float() / exact) / math.log(max_distance / exact)
                     * (n_buckets - exact)).long()
    large = torch.clamp(large, max=n_buckets - 1)
    return buckets + torch.where(rel < exact, rel, large)


class RelativeBias(nn.Module):
    """T5's relative position bias of one stack: W_bias [bucket, head]."""

    def __init__(self, cfg: TransformerConfig, spec: Seq2SeqSpec) -> None:
        super().__init__()
        self.W_bias = nn.Embedding(spec.rel_buckets, cfg.n_heads)
        self.bidirectional = not cfg.causal
        self.n_buckets, self.max_distance = spec.rel_buckets, spec.rel_max_distance
        self.hook_bias = HookPoint()  # [1, head, q_pos, k_pos]

    def buckets(self, n_q: int, n_k: int, device=None) -> torch.Tensor:
        q = torch.arange(n_q, device=device)[:, None]  # [q_pos, 1]
        k = torch.arange(n_k, device=device)[None, :]  # [1, k_pos]
        return relative_bucket(k - q, self.bidirectional, self.n_buckets, self.max_distance)

    def forward(self, n_q: int, n_k: int, device=None) -> torch.Tensor:
        values = self.W_bias(self.buckets(n_q, n_k, device))  # [q_pos, k_pos, head]
        return self.hook_bias(values.permute(2, 0, 1)[None])  # [1, head, q_pos, k_pos]


def marian_table(n_pos: int, d_model: int) -> torch.Tensor:
    """Marian's fixed positions: sin of every even-indexed angle in the first half of each
    vector, cos of every odd-indexed one in the second (not interleaved)."""
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]  # [pos, 1]
    j = torch.arange(d_model, dtype=torch.float64)  # [d_model]
    angle = pos / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor") / d_model)
    half = (d_model + 1) // 2
    table = torch.empty(n_pos, d_model, dtype=torch.float64)
    table[:, :half] = torch.sin(angle[:, 0::2])
    table[:, half:] = torch.cos(angle[:, 1::2])
    return table.float()


class Seq2SeqEmbed(nn.Module):
    """Token embedding * embed_scale, plus the family's positions (none for T5), then BART's
    LayerNorm. Positions count 0, 1, ... (+ BART's offset of 2), padding included, as HF does."""

    def __init__(self, cfg: TransformerConfig, spec: Seq2SeqSpec) -> None:
        super().__init__()
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.scale, self.offset, self.kind = spec.embed_scale, spec.position_offset, spec.positions
        if self.kind == "learned":
            self.W_pos = nn.Embedding(cfg.n_ctx + self.offset, cfg.d_model)
        elif self.kind == "sinusoidal":
            self.register_buffer("pe", marian_table(cfg.n_ctx, cfg.d_model), persistent=False)
        self.ln = LayerNorm(cfg.d_model, 1e-5) if spec.embed_norm else None
        self.hook_tok = HookPoint()  # [batch, pos, d_model]
        if self.kind != "relative":
            self.hook_pos = HookPoint()  # [batch, pos, d_model]
            self.hook_sum = HookPoint()  # [batch, pos, d_model]

    def forward(self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None):
        tok = self.W_E(ids)  # [batch, pos, d_model]
        tok = self.hook_tok(tok * self.scale if self.scale != 1.0 else tok)
        if self.kind == "relative":
            return tok
        n = ids.shape[1]
        if self.kind == "learned":
            pos = self.W_pos(torch.arange(n, device=ids.device) + self.offset)  # [pos, d_model]
        else:
            pos = self.pe[:n]  # [pos, d_model]
        x = self.hook_sum(tok + self.hook_pos(pos.expand_as(tok)))
        return self.ln(x) if self.ln is not None else x


class PostLNDecoderBlock(DecoderBlock):
    """BART and Marian: x -> LN1(x + SelfAttn(x)) -> LN_cross(x + CrossAttn(x, memory))
    -> LN2(x + MLP(x)). The norms follow the parts they are named after."""

    def recipes(self) -> dict[str, tuple]:
        # the streams between the parts are the norms' outputs; ln2's is the block's output
        return {**self.shared_recipes("hook_resid_pre", "hook_resid_mid", "hook_resid_cross"),
                "ln1.hook_normalized": norm_recipe(self.ln1, "hook_resid_pre", "hook_attn_out"),
                "hook_resid_mid": (same, ("ln1.hook_normalized",)),
                "ln_cross.hook_normalized": norm_recipe(self.ln_cross, "hook_resid_mid",
                                                        "hook_cross_out"),
                "hook_resid_cross": (same, ("ln_cross.hook_normalized",))}

    def forward(self, x, mask, memory, memory_mask) -> torch.Tensor:
        x = self.hook_resid_pre(x)  # [batch, pos, d_model]
        x = self.hook_resid_mid(self.ln1(x + self.hook_attn_out(self.attn(x, mask))))
        cross = self.hook_cross_out(self.cross_attn(x, memory, memory_mask))
        x = self.hook_resid_cross(self.ln_cross(x + cross))  # [batch, pos, d_model]
        return self.hook_resid_post(self.ln2(x + self.hook_mlp_out(self.mlp(x))))


class Seq2SeqDecoder(nn.Module):
    """The decoder stack: embed, (T5: rel_bias), blocks, (T5: ln_final), unembed (+ b_U)."""

    def __init__(self, cfg: TransformerConfig, spec: Seq2SeqSpec) -> None:
        super().__init__()
        self.cfg, self.spec = cfg, spec
        self.embed = Seq2SeqEmbed(cfg, spec)
        self.rel_bias = RelativeBias(cfg, spec) if spec.positions == "relative" else None
        block = DecoderBlock if cfg.block == "pre_ln" else PostLNDecoderBlock
        self.blocks = nn.ModuleList(block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = make_norm(cfg) if cfg.block == "pre_ln" else None
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab, bias=False)
        self.b_U = nn.Parameter(torch.zeros(cfg.d_vocab)) if spec.logits_bias else None
        self.hook_logits = HookPoint()  # [batch, out_pos, vocab]

    def forward(self, ids, memory, memory_mask) -> torch.Tensor:
        # ids: [batch, out_pos]; memory: [batch, src_pos, d_model]; memory_mask: [batch, 1, 1, src]
        x = self.embed(ids)  # [batch, out_pos, d_model]
        mask = self.self_mask(ids, x.dtype)  # [1, 1 or head, out_pos, out_pos]
        for block in self.blocks:
            x = block(x, mask, memory, memory_mask)  # [batch, out_pos, d_model]
        if self.ln_final is not None:
            x = self.ln_final(x)
        if self.spec.out_scale != 1.0:
            x = x * self.spec.out_scale  # T5 with a tied head
        logits = self.unembed(x)  # [batch, out_pos, vocab]
        return self.hook_logits(logits + self.b_U if self.b_U is not None else logits)

    def self_mask(self, ids: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The additive mask of every self-attention layer: causal, plus T5's relative bias."""
        mask = attention_mask_bias(torch.ones_like(ids), True, dtype)  # [1, 1, out, out]
        if self.rel_bias is not None:
            mask = self.rel_bias(ids.shape[1], ids.shape[1], ids.device) + mask  # [1, head, o, o]
        return mask


class Seq2SeqTransformer(EncoderDecoder):
    """A Hugging Face encoder-decoder: the encoder is the trunk (`embed`, `blocks.{i}`), as in
    every model here; `decoder.blocks.{i}.cross_attn.hook_pattern` reads the source."""

    def __init__(self, cfg: TransformerConfig, dec_cfg: TransformerConfig,
                 spec: Seq2SeqSpec) -> None:
        nn.Module.__init__(self)  # not EncoderDecoder's: its checks are for tiny-reverse
        if cfg.d_model != dec_cfg.d_model or cfg.d_vocab != dec_cfg.d_vocab:
            raise ValueError("the encoder and decoder must share d_model and d_vocab")
        self.cfg, self.dec_cfg, self.spec = cfg, dec_cfg, spec
        self.embed = Seq2SeqEmbed(cfg, spec)
        self.rel_bias = RelativeBias(cfg, spec) if spec.positions == "relative" else None
        self.blocks = nn.ModuleList(make_block(cfg, i) for i in range(cfg.n_layers))
        self.ln_final = make_norm(cfg) if cfg.block == "pre_ln" else None
        self.decoder = Seq2SeqDecoder(dec_cfg, spec)
        self.hook_names: tuple[str, ...] = tuple(name_hook_points(self))

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.forward_from(0, self.embed(src), src_mask)
        return out.residual, out.final

    def forward_from(self, layer: int, resid: torch.Tensor,
                     attention_mask: torch.Tensor) -> ModelOutput:
        mask = self.encoder_mask(attention_mask.to(resid.device), resid.dtype)
        x = resid  # [batch, src_pos, d_model]
        for block in self.blocks[layer:]:
            x = block(x, mask)
        final = self.ln_final(x) if self.ln_final is not None else x
        return ModelOutput(residual=x, final=final, logits=None, pooled=None)

    def encoder_mask(self, src_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The additive mask of every encoder layer: padding, plus T5's relative bias."""
        mask = attention_mask_bias(src_mask, False, dtype)  # [batch, 1, 1, src_pos]
        if self.rel_bias is not None:  # [batch, head, q_pos, k_pos]
            n = src_mask.shape[1]
            mask = self.rel_bias(n, n, src_mask.device) + mask
        return mask

