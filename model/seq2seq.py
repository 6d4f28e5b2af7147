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
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from .blocks import make_block
from .config import MAX_PARAMS, TransformerConfig
from .device import pick_device
from .hooks import HookPoint, caching_hook, hooks, name_hook_points
from .layers import Attention, make_embed, make_mlp, make_norm
from .loading import MAX_JSON_BYTES, LoadedModel, read_weights
from .registry import OWN_MODEL_TYPE, ModelLoadError
from .tokenizer import CharTokenizer, Encoding
from .trace import Trace
from .transformer import ModelOutput, attention_mask_bias


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
        mask = attention_mask_bias(torch.ones_like(ids), True, x.dtype)  # [1, 1, out, out]
        for block in self.blocks:
            x = block(x, mask, memory, memory_mask)  # [batch, out_pos, d_model]
        return self.hook_logits(self.unembed(self.ln_final(x)))  # [batch, out_pos, vocab]


class EncoderDecoder(nn.Module):
    """`cfg` is the encoder's config (what a Trace reports); `dec_cfg` the decoder's."""

    def __init__(self, cfg: TransformerConfig, dec_cfg: TransformerConfig) -> None:
        super().__init__()
        check_pair(cfg, dec_cfg)
        self.cfg, self.dec_cfg = cfg, dec_cfg
        self.embed = make_embed(cfg)
        self.blocks = nn.ModuleList(make_block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = make_norm(cfg)
        # The trunk reads like an encoder-only HookedTransformer (BERT without a pooler).
        self.pooler = self.unembed = self.hook_logits = None
        self.decoder = Decoder(dec_cfg)
        self.hook_names: tuple[str, ...] = tuple(name_hook_points(self))

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """src, src_mask: [batch, src_pos] -> (residual, memory) [batch, src_pos, d_model]."""
        x = self.embed(src, torch.zeros_like(src))  # [batch, src_pos, d_model]
        mask = attention_mask_bias(src_mask, False, x.dtype)  # [batch, 1, src_pos, src_pos]
        for block in self.blocks:
            x = block(x, mask)  # [batch, src_pos, d_model]
        return x, self.ln_final(x)

    def memory_mask(self, src_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return attention_mask_bias(src_mask, False, dtype)[:, :, :1]  # [batch, 1, 1, src_pos]

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


# ------------------------------------------------------------------------------- measuring
def cross_patterns(model: EncoderDecoder, src, src_mask, dec_in) -> torch.Tensor:
    """Teacher-forced run -> every cross-attention pattern, [layer, batch, head, out, src]."""
    cache: dict[str, torch.Tensor] = {}
    names = [f"decoder.blocks.{i}.cross_attn.hook_pattern" for i in range(model.dec_cfg.n_layers)]
    with torch.no_grad(), hooks(model.hook_names, [(n, caching_hook(cache)) for n in names]):
        model(src, src_mask, decoder_input_ids=dec_in)
    return torch.stack([cache[n] for n in names])  # [layer, batch, head, out_pos, src_pos]


def reversal_scores(model: EncoderDecoder, batch: dict, bos: int, eos: int):
    """On a batch of `tasks.reversal_pairs`: ([layer, head] mean cross-attention from each
    decoder row that writes a letter to the source letter it must copy, fraction of words
    that greedy decoding reverses exactly)."""
    was_training = model.training
    model.eval()
    try:
        patterns = cross_patterns(model, batch["src"], batch["src_mask"], batch["dec_in"])
        out = model.greedy(batch["src"], batch["src_mask"], bos, eos, batch["src"].shape[1])
    finally:
        model.train(was_training)
    rows = batch["source_pos"] >= 0  # [batch, out_pos], rows that copy a letter
    right = batch["source_pos"].clamp(min=0)  # [batch, out_pos]
    n_layers, _, n_heads = patterns.shape[:3]
    index = right[None, :, None, :, None].expand(n_layers, -1, n_heads, -1, 1)
    on_right = patterns.gather(-1, index)[..., 0]  # [layer, batch, head, out_pos]
    weights = rows[None, :, None, :].float()  # [1, batch, 1, out_pos]
    align = (on_right * weights).sum(dim=(1, 3)) / weights.sum(dim=(1, 3))  # [layer, head]
    target = batch["target"]  # [batch, out_pos], -100 past EOS
    width = min(out.shape[1] - 1, target.shape[1])
    written = out[:, 1: 1 + width]  # [batch, out_pos]
    ok = (written == target[:, :width]) | (target[:, :width] == -100)  # [batch, out_pos]
    complete = ok.all(dim=1) & (out.shape[1] - 1 >= (target != -100).sum(dim=1))
    return align, float(complete.float().mean())


# --------------------------------------------------------------------- loading and running
class ReversalTokenizer(CharTokenizer):
    """One token per character, lower-cased (the model knows a-z), EOS after each text."""

    def __init__(self, chars: str, pad: str, bos: str, eos: str, unk: str = "?") -> None:
        super().__init__(chars, unk)
        for name, c in (("pad", pad), ("bos", bos), ("eos", eos)):
            if not (isinstance(c, str) and len(c) == 1 and c in self.index):
                raise ValueError(f"the {name} token must be one of the characters in 'chars', "
                                 f"got {c!r:.40}")
        self.pad_id, self.bos_id, self.eos_id = (self.index[c] for c in (pad, bos, eos))

    def encode(self, texts: list[str], pairs: list[str] | None, max_len: int) -> Encoding:
        if pairs is not None:
            raise ValueError("the encoder-decoder reads one text at a time, not sentence pairs")
        full = [[self.index.get(c, self.unk_id) for c in t.lower()] for t in texts]
        rows = [r[: max_len - 1] + [self.eos_id] for r in full]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)  # [batch, pos]
        mask = torch.zeros_like(ids)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        special = (ids == self.eos_id) | (mask == 0)  # [batch, pos]
        return Encoding(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids),
                        special_mask=special.long(), tokens=[self.tokens(r) for r in ids.tolist()],
                        n_dropped=[max(0, len(r) - (max_len - 1)) for r in full])


@dataclass(eq=False)
class EncoderDecoderTrace(Trace):
    """A Trace of the encoder (tokens = the source text), plus the decoder's side.

    The decoder ran greedily until EOS, then once more on its own output to record it:
    decoder row t reads decoder_tokens[t] and writes output_tokens[t].
    """

    dec_cfg: TransformerConfig | None = None
    decoder_tokens: list[list[str]] = field(default_factory=list)  # [batch][out_pos]
    output_tokens: list[list[str]] = field(default_factory=list)  # [batch][out_pos]
    outputs: list[str] = field(default_factory=list)  # the decoded text of each item
    decoder_logits: torch.Tensor | None = None  # [batch, out_pos, vocab]

    def _decoder_stack(self, hook: str) -> torch.Tensor:
        names = [f"decoder.blocks.{i}.{hook}" for i in range(self.dec_cfg.n_layers)]
        return self._unbatch(torch.stack([self.cache[n] for n in names], 1))

    @property
    def cross_attentions(self) -> torch.Tensor:
        """[dec_layers, head, out_pos, src_pos] (batch first for a batch): rows are decoder
        positions, columns the source tokens, each row a softmax over the source."""
        return self._decoder_stack("cross_attn.hook_pattern")

    @property
    def decoder_attentions(self) -> torch.Tensor:
        """[dec_layers, head, out_pos, out_pos], causal self-attention of the decoder."""
        return self._decoder_stack("attn.hook_pattern")


class EncoderDecoderModel(LoadedModel):
    """`run(text)` encodes the text, decodes greedily, and records both sides."""

    def _run(self, enc: Encoding, keep) -> EncoderDecoderTrace:
        model, tok, dev = self.model, self.tokenizer, self.device
        src, mask = enc.input_ids.to(dev), enc.attention_mask.to(dev)  # [batch, src_pos]
        with torch.no_grad():
            out = model.greedy(src, mask, tok.bos_id, tok.eos_id, src.shape[1])  # [batch, 1+out]
        dec_in = out[:, :-1] if out.shape[1] > 1 else out  # [batch, out_pos]
        cache: dict[str, torch.Tensor] = {}
        names = [n for n in model.hook_names if keep is None or keep(n)]
        with torch.no_grad(), hooks(model.hook_names, [(n, caching_hook(cache)) for n in names]):
            result = model(src, mask, decoder_input_ids=dec_in)
        cache = {k: v.float().cpu() for k, v in cache.items()}
        written = [tok.tokens(r) for r in out[:, 1:].tolist()]
        texts = ["".join(r).split(tok.chars[tok.eos_id])[0] for r in written]
        return EncoderDecoderTrace(
            model_name=self.name, cfg=self.cfg, batch_tokens=enc.tokens,
            input_ids=enc.input_ids, attention_mask=enc.attention_mask,
            token_type_ids=enc.token_type_ids, special_mask=enc.special_mask,
            dropped=enc.n_dropped, cache=cache, batched=enc.input_ids.shape[0] > 1,
            final=result.final.float().cpu(), notice=self.notice, dec_cfg=model.dec_cfg,
            decoder_tokens=[tok.tokens(r) for r in dec_in.tolist()], output_tokens=written,
            outputs=texts, decoder_logits=result.decoder_logits.float().cpu(),
        )


def read_own_config(directory: Path) -> dict | None:
    path = Path(directory) / "config.json"
    try:
        if path.stat().st_size > MAX_JSON_BYTES:  # load_model then says it is too large
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_encoder_decoder(directory: Path) -> bool:
    data = read_own_config(directory)
    return bool(data) and data.get("model_type") == OWN_MODEL_TYPE and \
        data.get("architecture") == "encoder_decoder"


def load_encoder_decoder(directory: Path, name: str, device=None) -> EncoderDecoderModel:
    """Load an encoder-decoder saved by model.train (config.json with "architecture":
    "encoder_decoder", "config" for the encoder, "decoder", and "special" tokens)."""
    data, directory = read_own_config(directory), Path(directory)
    try:
        enc_cfg = TransformerConfig.from_dict(data["config"])
        dec_cfg = TransformerConfig.from_dict(data["decoder"])
        check_pair(enc_cfg, dec_cfg)
        special = data["special"]
        if not isinstance(special, dict):
            raise TypeError('"special" must be an object with the pad, bos and eos characters')
    except (KeyError, TypeError, ValueError) as exc:
        problem = f"config.json lacks {exc.args[0]!r}" if isinstance(exc, KeyError) else exc
        raise ModelLoadError(f"{directory} is not a valid encoder-decoder: {problem}") from exc
    if enc_cfg.n_params + dec_cfg.n_params > MAX_PARAMS:  # each passed; both together may not
        raise ModelLoadError(f"the encoder and decoder in {directory} hold about "
                             f"{enc_cfg.n_params + dec_cfg.n_params:.2g} parameters; the limit "
                             f"is {MAX_PARAMS:,} (MAX_PARAMS in model/config.py)")
    tokenizer_file = directory / "tokenizer.json"
    try:
        chars = CharTokenizer.from_file(tokenizer_file, enc_cfg.d_vocab)  # checks the file
        tokenizer = ReversalTokenizer(chars.chars, special.get("pad"), special.get("bos"),
                                      special.get("eos"), chars.chars[chars.unk_id])
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load the character tokenizer {tokenizer_file}: "
                             f"{exc}") from exc
    model = EncoderDecoder(enc_cfg, dec_cfg)
    state = read_weights(directory)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    if expected != got:
        wrong = sorted(set(expected) ^ set(got)) or sorted(k for k in got if got[k] != expected[k])
        raise ModelLoadError(f"the weights do not fit the config: {wrong[:5]}")
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    dev, notice = pick_device(device)
    return EncoderDecoderModel(name, model.to(dev), tokenizer, dev, notice)
