"""What the decoder-lab pages need to run an encoder–decoder's decoder (BART, Marian, T5): the
source is encoded once, then the decoder reads its own tokens (teacher forcing) with hooks,
through the engine's run (model/run.py: `encode_source`, `run_with_hooks(stack="decoder")`).

Every encoder–decoder the engine runs: BART, Marian and T5 (model/seq2seq_stacks.py) and the
project's own tiny-reverse (model/seq2seq.py), whose decoder has no family extras (no logits'
bias, no output scaling, no norm after the embeddings).
"""

from __future__ import annotations

import torch

from model.hook_names import hook_names
from model.runner import EncoderDecoderModel


def is_seq2seq(loaded) -> bool:
    """An encoder–decoder (BART, Marian, T5, tiny-reverse): the decoder lab takes it apart."""
    return isinstance(loaded, EncoderDecoderModel)


def decoder_names(loaded):
    """hook_names of the decoder stack (names under "decoder.")."""
    return hook_names(loaded.model.dec_cfg, decoder=True)


def as_row(ids, d_vocab: int, what: str, device) -> torch.Tensor:
    """Token ids [pos] (list or tensor) -> [1, pos] on `device`, checked."""
    row = torch.as_tensor(ids, dtype=torch.long).reshape(1, -1)  # [1, pos]
    if row.numel() == 0:
        raise ValueError(f"the {what} has no tokens")
    if int(row.min()) < 0 or int(row.max()) >= d_vocab:
        raise ValueError(f"the {what}'s token ids must lie in [0, {d_vocab})")
    return row.to(device)


def start_ids(loaded) -> tuple[int, int]:
    """The decoder's first input token and its end token: a Hugging Face model's config.json
    (its spec), else the tokenizer's start and end marks (tiny-reverse)."""
    spec = getattr(loaded.model, "spec", None)
    if spec is not None:
        return spec.start_id, spec.eos_id
    return loaded.tokenizer.bos_id, loaded.tokenizer.eos_id


def out_scale(decoder) -> float:
    """What the decoder's output is multiplied by before the head (T5 with a tied head)."""
    spec = getattr(decoder, "spec", None)
    return 1.0 if spec is None else spec.out_scale
