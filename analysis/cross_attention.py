"""The encoder-decoder's cross-attention, measured: every pattern of a teacher-forced run, and
how well the reversal model looks at the letter it copies."""

from __future__ import annotations

import torch

from model.hook_names import hook_names
from model.run import run_with_hooks
from model.seq2seq import EncoderDecoder


def cross_patterns(model: EncoderDecoder, src, src_mask, dec_in) -> torch.Tensor:
    """Teacher-forced run -> every cross-attention pattern, [layer, batch, head, out, src]."""
    names = hook_names(model.dec_cfg, decoder=True).every_layer("cross_attn", "pattern")
    _, cache = run_with_hooks(model, src, attention_mask=src_mask, decoder_ids=dec_in,
                              keep=names)
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
