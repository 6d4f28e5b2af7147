"""A tiny encoder-decoder (the original transformer's shape) built from our own layers.

The encoder is the model's trunk, named exactly like every other model here (`embed`,
`blocks.{i}`), so each view of the app that reads `blocks.{i}.attn.hook_pattern` shows the
encoder's self-attention over the text the user typed. The decoder hangs off it:

    decoder.embed                          the decoder's token + position embedding
    decoder.blocks.{i}.attn                causal self-attention over the output so far
    decoder.blocks.{i}.cross_attn          queries from the decoder, keys and values from
                                           the encoder's output ("memory")
    decoder.unembed                        logits over the vocabulary

so `decoder.blocks.{i}.cross_attn.hook_pattern` is [batch, head, out_pos, src_pos]: rows are
decoder positions (queries), columns are source tokens (keys), softmax over the source.

Its kin live with their own kind: the tokenizer (ReversalTokenizer) in tokenizer.py, the trace
(EncoderDecoderTrace) in trace.py, the runner in runner.py and the loader in loading.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from .blocks import make_block, norm_recipe, part_recipes
from .config import TransformerConfig
from .hooks import HookPoint, name_hook_points
from .attention import Attention, attention_mask_bias
from .layers import make_embed, make_norm
from .mlp import make_mlp
from .transformer import ModelOutput


@dataclass
class EncoderDecoderOutput(ModelOutput):
    memory: torch.Tensor | None = None  # [batch, src_pos, d_model], what cross-attention reads
    decoder_logits: torch.Tensor | None = None  # [batch, out_pos, vocab]


def check_pair(enc: TransformerConfig, dec: TransformerConfig) -> None:
    """The encoder and decoder must share d_model and vocabulary, and fit this class."""
    problems = []
    if enc.d_model != dec.d_model or enc.d_vocab != dec.d_vocab:
        problems.append("the encoder and decoder must share d_model and d_vocab")
    if enc.causal or not dec.causal:
        problems.append("the encoder must be bidirectional (causal=False), the decoder causal")
    if "rotary" in (enc.positions, dec.positions):
        problems.append("rotary positions are not supported in the encoder-decoder")
    if enc.block != "pre_ln" or dec.block != "pre_ln" or not dec.has_lm_head or enc.has_lm_head:
        problems.append("both stacks are pre-LN; only the decoder has an LM head")
    if problems:
        raise ValueError("; ".join(problems))


class CrossAttention(Attention):
    """Attention whose queries come from x (the decoder) and keys and values from memory
    (the encoder's output). Same per-head weights and hook points as self-attention."""

    def forward(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # x: [batch, q_pos, d_model]; memory: [batch, k_pos, d_model]; mask: [batch, 1, 1, k_pos]
        q = self.hook_q(self._split_heads(x, self.W_Q, self.b_Q))  # [batch, head, q_pos, d_head]
        k = self.hook_k(self._split_heads(memory, self.W_K, self.b_K))  # [batch, head, k, d_head]
        v = self.hook_v(self._split_heads(memory, self.W_V, self.b_V))  # [batch, head, k, d_head]
        return self.attend(q, k, v, mask)  # [batch, q_pos, d_model]


class DecoderBlock(nn.Module):
    """Pre-LN: x + SelfAttn(LN(x)), then + CrossAttn(LN(x), memory), then + MLP(LN(x))."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.ln1 = make_norm(cfg)
        self.attn = Attention(cfg)
        self.ln_cross = make_norm(cfg)
        self.cross_attn = CrossAttention(dataclasses.replace(cfg, causal=False))
        self.ln2 = make_norm(cfg)
        self.mlp = make_mlp(cfg)
        self.hook_resid_pre = HookPoint()  # [batch, pos, d_model]
        self.hook_attn_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_mid = HookPoint()  # [batch, pos, d_model], after self-attention
        self.hook_cross_out = HookPoint()  # [batch, pos, d_model], cross-attention after W_O
        self.hook_resid_cross = HookPoint()  # [batch, pos, d_model], after cross-attention
        self.hook_mlp_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_post = HookPoint()  # [batch, pos, d_model]

    def recipes(self) -> dict[str, tuple]:
        """Hook point -> (function, the hook points it reads), names under this block: what
        runner.record may recompute on first read instead of keeping (blocks.part_recipes).
        Pre-LN: each norm reads the stream, each part reads its norm."""
        return {**self.shared_recipes("ln1.hook_normalized", "ln_cross.hook_normalized",
                                      "ln2.hook_normalized"),
                "ln1.hook_normalized": norm_recipe(self.ln1, "hook_resid_pre"),
                "hook_resid_mid": (torch.add, ("hook_resid_pre", "hook_attn_out")),
                "ln_cross.hook_normalized": norm_recipe(self.ln_cross, "hook_resid_mid"),
                "hook_resid_cross": (torch.add, ("hook_resid_mid", "hook_cross_out")),
                "ln2.hook_normalized": norm_recipe(self.ln2, "hook_resid_cross")}

    def shared_recipes(self, attn_input: str, cross_input: str, mlp_input: str) -> dict:
        """blocks.part_recipes, and the cross-attention's q (its k and v read the encoder's
        output) and output."""
        return {**part_recipes(self, attn_input, mlp_input),
                "cross_attn.hook_q": self.cross_attn.projection_recipes(cross_input)["hook_q"],
                "hook_cross_out": (self.cross_attn.out_from, ("cross_attn.hook_z",))}

    def forward(self, x, mask, memory, memory_mask) -> torch.Tensor:
        x = self.hook_resid_pre(x)  # [batch, pos, d_model]
        x = self.hook_resid_mid(x + self.hook_attn_out(self.attn(self.ln1(x), mask)))
        cross = self.hook_cross_out(self.cross_attn(self.ln_cross(x), memory, memory_mask))
        x = self.hook_resid_cross(x + cross)  # [batch, pos, d_model]
        return self.hook_resid_post(x + self.hook_mlp_out(self.mlp(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = make_embed(cfg)
        self.blocks = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.n_layers))
        self.ln_final = make_norm(cfg)
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab, bias=False)
        self.hook_logits = HookPoint()  # [batch, out_pos, vocab]

    def forward(self, ids, memory, memory_mask) -> torch.Tensor:
        # ids: [batch, out_pos]; memory: [batch, src_pos, d_model]; memory_mask: [batch, 1, 1, src]
        x = self.embed(ids, torch.zeros_like(ids))  # [batch, out_pos, d_model]
        mask = self.self_mask(ids, x.dtype)  # [1, 1, out, out]
        for block in self.blocks:
            x = block(x, mask, memory, memory_mask)  # [batch, out_pos, d_model]
        return self.hook_logits(self.unembed(self.ln_final(x)))  # [batch, out_pos, vocab]

    def self_mask(self, ids: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The additive mask of every self-attention layer: causal, [1, 1, out_pos, out_pos]."""
        return attention_mask_bias(torch.ones_like(ids), True, dtype)


class EncoderDecoder(nn.Module):
    """`cfg` is the encoder's config (what a Trace reports); `dec_cfg` the decoder's."""

    def __init__(self, cfg: TransformerConfig, dec_cfg: TransformerConfig) -> None:
        super().__init__()
        check_pair(cfg, dec_cfg)
        self.cfg, self.dec_cfg = cfg, dec_cfg
        self.embed = make_embed(cfg)
        self.blocks = nn.ModuleList(make_block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = make_norm(cfg)
        self.decoder = Decoder(dec_cfg)
        self.hook_names: tuple[str, ...] = tuple(name_hook_points(self))

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """src, src_mask: [batch, src_pos] -> (residual, memory) [batch, src_pos, d_model]."""
        x = self.embed(src, torch.zeros_like(src))  # [batch, src_pos, d_model]
        out = self.forward_from(0, x, src_mask)
        return out.residual, out.final

    def forward_from(self, layer: int, resid: torch.Tensor,
                     attention_mask: torch.Tensor) -> ModelOutput:
        """The encoder from block `layer` on, given that block's input [batch, src_pos, d_model]
        (as HookedTransformer.forward_from; the encoder has no logits and no pooler)."""
        mask = self.encoder_mask(attention_mask.to(resid.device), resid.dtype)
        x = resid  # [batch, src_pos, d_model]
        for block in self.blocks[layer:]:
            x = block(x, mask)
        return ModelOutput(residual=x, final=self.ln_final(x), logits=None, pooled=None)

    def encoder_mask(self, src_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The additive mask of every encoder layer, from src_mask [batch, src_pos]."""
        return attention_mask_bias(src_mask, False, dtype)  # [batch, 1, 1, src_pos]

    def memory_mask(self, src_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return attention_mask_bias(src_mask, False, dtype)[:, :, :1]  # [batch, 1, 1, src_pos]

    def attention_masks(self, src_mask: torch.Tensor, decoder_ids: torch.Tensor,
                        dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """The additive mask each attention module gets in forward(src, src_mask,
        decoder_input_ids=decoder_ids), by module path (runner.record recomputes the scores
        from them)."""
        enc, dec = self.encoder_mask(src_mask, dtype), self.decoder.self_mask(decoder_ids, dtype)
        memory = self.memory_mask(src_mask, dtype)
        masks = {f"blocks.{i}.attn": enc for i in range(len(self.blocks))}
        for i in range(len(self.decoder.blocks)):
            masks[f"decoder.blocks.{i}.attn"] = dec
            masks[f"decoder.blocks.{i}.cross_attn"] = memory
        return masks

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None,
                decoder_input_ids: torch.Tensor | None = None) -> EncoderDecoderOutput:
        """Encode input_ids [batch, src_pos]; with decoder_input_ids [batch, out_pos] also run
        the decoder on them (teacher forcing) and return its logits."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        residual, memory = self.encode(input_ids, attention_mask)
        logits = None
        if decoder_input_ids is not None:
            logits = self.decoder(decoder_input_ids, memory,
                                  self.memory_mask(attention_mask, memory.dtype))
        return EncoderDecoderOutput(residual=residual, final=memory, logits=None, pooled=None,
                                    memory=memory, decoder_logits=logits)

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, src_mask: torch.Tensor, bos: int, eos: int,
               max_len: int) -> torch.Tensor:
        """[batch, <= max_len + 1]: BOS, then the argmax token at each step, until every row has
        written EOS (rows that finished keep writing EOS) or max_len tokens."""
        _, memory = self.encode(src, src_mask)  # [batch, src_pos, d_model]
        memory_mask = self.memory_mask(src_mask, memory.dtype)
        out = torch.full((src.shape[0], 1), bos, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(min(max_len, self.dec_cfg.n_ctx)):  # feeds 1..n_ctx tokens
            logits = self.decoder(out, memory, memory_mask)  # [batch, out_pos, vocab]
            nxt = logits[:, -1].argmax(-1).masked_fill(done, eos)  # [batch]
            out = torch.cat([out, nxt[:, None]], dim=1)  # [batch, out_pos + 1]
            done |= nxt == eos
            if bool(done.all()):
                break
        return out
