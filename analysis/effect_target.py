"""The target of the effect page: the one number whose dependence on each input token is measured.

- A decoder: the log-probability of one next token at a chosen position,
  log softmax(logits[position])[token].
- An encoder: its sentence vector, the mean of the final token vectors over the text (or the
  final vector of [CLS], for models pooled that way). The target is the cosine similarity of
  that vector to a second sentence's when one is given, otherwise its length (norm). The norm
  is taken before the L2 normalisation that sentence-transformers apply (after it every
  sentence vector has length 1, which would leave nothing to explain).

`score` runs the model on token ids, optionally with the token embeddings replaced by a given
tensor (through the `embed.hook_tok` hook point, in a context that only the calling thread
sees), and returns the target for every batch item. It takes the same steps as
`HookedTransformer.forward` (embeddings, blocks, final norm), but unembeds only the target
position, so a batch of 64 copies of a long text does not build 64 × pos × vocab logits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from analysis.ablation import Inputs
from model.hook_names import hook_names
from model.run import run_with_hooks
from model.transformer import HookedTransformer

KINDS = ("next_token", "cosine", "norm")
POOLINGS = ("mean", "cls")


@dataclass(frozen=True, eq=False)
class Target:
    """What is measured. next_token: `position` and `token_id`; cosine: `other`, the second
    sentence's pooled vector [d_model]; norm: nothing more. `label` says it in one line."""

    kind: str
    label: str
    position: int | None = None  # next_token: the position whose prediction is scored
    token_id: int | None = None  # next_token: the token whose log-probability is the target
    pooling: str = "mean"  # encoders: "mean" over the text's tokens, or "cls"
    other: torch.Tensor | None = None  # cosine: [d_model], on the CPU

    def at(self, position: int) -> "Target":
        """The same target read at another position (after a token before it was removed)."""
        return dataclasses.replace(self, position=position)


def check_model(loaded) -> None:
    """ValueError unless the model is one stack of blocks (not the encoder–decoder)."""
    if not isinstance(loaded.model, HookedTransformer):
        raise ValueError("token importance works on one stack of layers (an encoder or a "
                         "decoder), not on the encoder–decoder model")


def special_token_id(loaded, which: str) -> int:
    """The id of the tokenizer's [PAD] ("pad") or [MASK] ("mask") token; ValueError if it has
    none. GPT-2 and Llama have no padding token of their own: ours pads with their end-of-text
    token, so that is their "pad"."""
    if which not in ("pad", "mask"):
        raise ValueError(f"which must be 'pad' or 'mask', got {which!r}")
    hf = getattr(loaded.tokenizer, "_tok", None)  # model/tokenizer.py: HFTokenizer's own
    found = getattr(hf, f"{which}_token_id", None) if hf is not None else None
    if found is None:
        name = "[PAD]" if which == "pad" else "[MASK]"
        raise ValueError(f"this model's tokenizer has no {name} token: choose another option")
    return int(found)


def _decode(loaded, token_id: int) -> str:
    """A token as text; one made only of spaces or line breaks as visible marks (␣, ↵)."""
    text = loaded.tokenizer.decode([int(token_id)])
    if text and not text.strip():
        return "".join({"\n": "↵", "\t": "⇥"}.get(c, "␣") for c in text)
    return text


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def make_target(loaded, inputs: Inputs, position: int | None = None,
                token_id: int | None = None, second: str | None = None,
                pooling: str | None = None) -> Target:
    """The target for this model and text.

    Decoders: `position` defaults to the last token; `token_id` to the token that really comes
    next in the text, or at the last position to the model's own first choice. Encoders:
    `second` (a second sentence) makes the target a cosine similarity, otherwise the norm;
    `pooling` "mean" (default, all-MiniLM-L6-v2's) or "cls".
    """
    check_model(loaded)
    cfg, n_pos = loaded.cfg, inputs.input_ids.shape[1]
    if cfg.causal:
        if second:
            raise ValueError("a second sentence is for encoders; a decoder's target is a next "
                             "token")
        if not cfg.has_lm_head:
            raise ValueError("this decoder was loaded without its language-model head, so it "
                             "cannot score a next token")
        return _next_token_target(loaded, inputs, n_pos - 1 if position is None else position,
                                  token_id)
    pooling = pooling or "mean"
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    what = ("the sentence vector (the mean of the final token vectors)" if pooling == "mean"
            else "the sentence vector (the final vector of the first token, [CLS])")
    if not second or not second.strip():
        return Target("norm", f"The length (norm) of {what}, before it is normalised.",
                      pooling=pooling)
    other_inputs = Inputs.encode(loaded, second)
    probe = Target("norm", "", pooling=pooling)
    with torch.no_grad():
        other = pooled(loaded, probe, other_inputs.input_ids, other_inputs.attention_mask,
                       other_inputs.token_type_ids)[0].float().cpu()  # [d_model]
    return Target("cosine", f"How close {what} is to that of “{_short(second)}” (cosine "
                  "similarity, from −1 to 1).", pooling=pooling, other=other)


def _next_token_target(loaded, inputs: Inputs, position: int, token_id: int | None) -> Target:
    n_pos = inputs.input_ids.shape[1]
    if not 0 <= position < n_pos:
        raise ValueError(f"the position must be between 0 and {n_pos - 1}, got {position}")
    if token_id is None:
        if position + 1 < n_pos:
            token_id = int(inputs.input_ids[0, position + 1])
        else:
            probe = Target("next_token", "", position=position, token_id=0)
            with torch.no_grad():
                final = final_states(loaded, inputs.input_ids[:, : position + 1],
                                     inputs.attention_mask[:, : position + 1],
                                     inputs.token_type_ids[:, : position + 1])
                token_id = int(_next_token_logprobs(loaded, probe, final).argmax(-1)[0])
    if not 0 <= int(token_id) < loaded.cfg.d_vocab:
        raise ValueError(f"the token id must be between 0 and {loaded.cfg.d_vocab - 1}")
    here = _decode(loaded, inputs.input_ids[0, position])
    label = (f"How likely the model finds “{_decode(loaded, token_id)}” as the next token after "
             f"“{here}” (token {position}): its log-probability.")
    return Target("next_token", label, position=position, token_id=int(token_id))


def final_states(loaded, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 token_type_ids: torch.Tensor, tok: torch.Tensor | None = None) -> torch.Tensor:
    """The final vectors [batch, pos, d_model] (after the final norm where there is one).

    ids, mask, types: [batch, pos]; tok, if given: [batch, pos, d_model] on the model's device,
    used in place of the token embeddings (the rest of the embedding, positions and token
    types, is added as usual). Gradients flow to `tok` when the caller enables them; the
    model's parameters are only read.
    """
    dev = loaded.device
    replace = [] if tok is None else [(hook_names(loaded.cfg).embed("tok"), lambda x, name: tok)]
    out, _ = run_with_hooks(loaded, input_ids.to(dev), attention_mask=attention_mask.to(dev),
                            token_type_ids=token_type_ids.to(dev), hooks=replace, head=False,
                            grad=True)  # gradients reach `tok` when the caller enables them
    return out.final  # [batch, pos, d_model]


def _next_token_logprobs(loaded, target: Target, final: torch.Tensor) -> torch.Tensor:
    logits = loaded.model.logits_from_final(final[:, target.position])  # [batch, vocab]
    return F.log_softmax(logits, dim=-1)  # [batch, vocab]


def pooled(loaded, target: Target, input_ids, attention_mask, token_type_ids,
           tok: torch.Tensor | None = None) -> torch.Tensor:
    """An encoder's sentence vector before normalisation: [batch, d_model]."""
    final = final_states(loaded, input_ids, attention_mask, token_type_ids, tok)
    if target.pooling == "cls":
        return final[:, 0]  # [batch, d_model]
    m = attention_mask.to(final.device, final.dtype)[..., None]  # [batch, pos, 1]
    return (final * m).sum(1) / m.sum(1)  # [batch, d_model]


def score(loaded, target: Target, input_ids: torch.Tensor, attention_mask: torch.Tensor,
          token_type_ids: torch.Tensor, tok: torch.Tensor | None = None) -> torch.Tensor:
    """The target for each batch item: [batch], on the model's device, in the model's dtype.

    ids, mask, types: [batch, pos] (or [1, pos] with `tok` [batch, pos, d_model]: the ids are
    widened to tok's batch)."""
    if tok is not None and input_ids.shape[0] != tok.shape[0]:
        input_ids, attention_mask, token_type_ids = (
            t.expand(tok.shape[0], -1) for t in (input_ids, attention_mask, token_type_ids))
    if target.kind == "next_token":
        final = final_states(loaded, input_ids, attention_mask, token_type_ids, tok)
        return _next_token_logprobs(loaded, target, final)[:, target.token_id]  # [batch]
    vec = pooled(loaded, target, input_ids, attention_mask, token_type_ids, tok)  # [batch, d]
    if target.kind == "norm":
        return vec.norm(dim=-1)  # [batch]
    other = target.other.to(vec.device, vec.dtype)[None]  # [1, d_model]
    return F.cosine_similarity(vec, other, dim=-1)  # [batch]


def visible_length(target: Target, n_pos: int) -> int:
    """How many leading tokens the target can depend on: a decoder's prediction at position t
    sees tokens 0..t only (causal attention); an encoder's sentence vector sees them all."""
    return n_pos if target.kind != "next_token" else target.position + 1


def prefix(inputs: Inputs, length: int) -> Inputs:
    """The first `length` tokens."""
    return Inputs(inputs.input_ids[:, :length], inputs.attention_mask[:, :length],
                  inputs.token_type_ids[:, :length])
