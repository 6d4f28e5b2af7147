"""Head ablation: remove chosen heads through the hook points and see what the model does then.

A head is removed by replacing its output z = pattern @ v (`blocks.L.attn.hook_z`,
[batch, head, q_pos, d_head]) before W_O, either by zeros or by its own mean over the text's
positions. Everything goes through `hooks(...)`: the shared model object is never modified
and nothing stays attached once a run returns.

An importance sweep removes one head at a time, for every head. Copies of the text run as
one batch where each batch item removes a different head of the same layer, starting from
the clean run's input to that layer. That layer's attention runs once: removing head h
changes its output by exactly (replacement − z_h) @ W_O[h], added per copy; the MLP and
the later blocks run per copy. The same numbers as separate full runs, with less work.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from analysis import cost
from model.hook_names import HookNames, hook_names
from model.run import run_with_hooks
from model.transformer import ModelOutput

MODES = ("zero", "mean")
Head = tuple[int, int]  # (layer, head)


@dataclass
class Inputs:
    """One encoded text, ready to run (batch of 1)."""

    input_ids: torch.Tensor  # [1, pos]
    attention_mask: torch.Tensor  # [1, pos]
    token_type_ids: torch.Tensor  # [1, pos]

    @classmethod
    def encode(cls, loaded, text: str, pair: str | None = None) -> "Inputs":
        enc = loaded.encode(text, pair or None)
        return cls(enc.input_ids[:1], enc.attention_mask[:1], enc.token_type_ids[:1])

    def repeat(self, n: int) -> "Inputs":
        return Inputs(*(t.expand(n, -1) for t in (self.input_ids, self.attention_mask,
                                                  self.token_type_ids)))


def _check_heads(heads: Iterable[Head], n_layers: int, n_heads: int) -> list[Head]:
    out = []
    for layer, head in heads:
        if not (0 <= int(layer) < n_layers and 0 <= int(head) < n_heads):
            raise ValueError(
                f"head ({layer}, {head}) is outside {n_layers} layers × {n_heads} heads")
        out.append((int(layer), int(head)))
    return out


def ablation_hooks(which: dict[int, torch.Tensor], mode: str, attention_mask: torch.Tensor,
                   names: HookNames) -> list[tuple[str, Callable]]:
    """(hook name, fn) pairs that replace chosen heads' z (`names`: the model's hook names).

    which: layer -> bool [batch or 1, head], True where that batch item loses that head.
    mode "zero": z = 0; "mean": z at every position = the head's mean z over the real
    (unpadded) positions of the same batch item.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    real = attention_mask.float()  # [batch, pos]

    def make(chosen: torch.Tensor) -> Callable:
        def replace(z: torch.Tensor, name: str) -> torch.Tensor:
            # z: [batch, head, q_pos, d_head]
            gone = chosen.to(z.device)[:, :, None, None]  # [batch or 1, head, 1, 1]
            if mode == "zero":
                return z.masked_fill(gone, 0.0)
            m = real.to(z.device, z.dtype)[:, None, :, None]  # [batch, 1, pos, 1]
            mean = (z * m).sum(2, keepdim=True) / m.sum(2, keepdim=True)  # [batch, head, 1, d]
            return torch.where(gone, mean.expand_as(z), z)
        return replace

    return [(names.attn(layer, "z"), make(chosen)) for layer, chosen in which.items()
            if bool(chosen.any())]


def forward(loaded, inputs: Inputs, fwd_hooks=(),
            keep=None) -> ModelOutput | tuple[ModelOutput, dict]:
    """One forward pass with extra hooks; outputs come back as float32 on the CPU. With
    `keep` (hook names), returns (output, cache of those hook points) instead."""
    dev = loaded.device
    out, cache = run_with_hooks(loaded, inputs.input_ids.to(dev), hooks=fwd_hooks,
                                attention_mask=inputs.attention_mask.to(dev),
                                token_type_ids=inputs.token_type_ids.to(dev), keep=keep)

    def cpu(t):
        return None if t is None else t.float().cpu()

    out = ModelOutput(residual=cpu(out.residual), final=cpu(out.final), logits=cpu(out.logits),
                      pooled=cpu(out.pooled))
    return out if keep is None else (out, cache)


def run_ablated(loaded, inputs: Inputs, heads: Iterable[Head], mode: str = "zero") -> ModelOutput:
    """The model's output with every head in `heads` removed at once."""
    cfg = loaded.cfg
    chosen = _check_heads(heads, cfg.n_layers, cfg.n_heads)
    which: dict[int, torch.Tensor] = {}
    for layer, head in chosen:
        which.setdefault(layer, torch.zeros(1, cfg.n_heads, dtype=torch.bool))[0, head] = True
    return forward(loaded, inputs, ablation_hooks(which, mode, inputs.attention_mask,
                                                  hook_names(cfg)))


# ------------------------------------------------------------------------------ effects
def next_token_losses(logits: torch.Tensor, input_ids: torch.Tensor,
                      attention_mask: torch.Tensor) -> torch.Tensor:
    """Cross-entropy (nats) of predicting token t+1 at position t: [batch, pos-1], NaN where
    either token is padding. logits: [batch, pos, vocab]; ids, mask: [batch, pos]."""
    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)  # [batch, pos-1, vocab]
    target = input_ids[:, 1:].to(logp.device)  # [batch, pos-1]
    nll = -logp.gather(-1, target[..., None])[..., 0]  # [batch, pos-1]
    valid = (attention_mask[:, 1:] * attention_mask[:, :-1]).bool().to(nll.device)
    return torch.where(valid, nll, torch.full_like(nll, float("nan")))


def text_loss(logits, input_ids, attention_mask) -> torch.Tensor:
    """Mean next-token cross-entropy over the text: [batch]. NaN for a one-token text."""
    return next_token_losses(logits, input_ids, attention_mask).nanmean(dim=-1)


def token_cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity per position of two [batch, pos, d_model] tensors: [batch, pos]."""
    return F.cosine_similarity(a.double(), b.double(), dim=-1).float()


def mean_pool(final: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Sentence-transformers mean pooling: average of the final vectors of every real token
    ([CLS] and [SEP] included, padding excluded), then L2-normalised.
    [batch, pos, d_model] -> [batch, d_model]."""
    m = attention_mask.to(final.device, final.dtype)[..., None]  # [batch, pos, 1]
    mean = (final * m).sum(1) / m.sum(1).clamp_min(1e-9)  # [batch, d_model]
    return F.normalize(mean, p=2, dim=-1)


def sentence_pooling(directory: Path | None) -> str | None:
    """"mean" when the model directory is a sentence-transformers model with mean pooling
    (all-MiniLM-L6-v2 is), "cls" for [CLS] pooling, else None."""
    if directory is None:
        return None
    config = Path(directory) / "1_Pooling" / "config.json"
    try:
        pooling = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if pooling.get("pooling_mode_mean_tokens"):
        return "mean"
    if pooling.get("pooling_mode_cls_token"):
        return "cls"
    return None


def sentence_embedding(final: torch.Tensor, attention_mask: torch.Tensor,
                       pooling: str) -> torch.Tensor:
    """[batch, pos, d_model] -> [batch, d_model], L2-normalised."""
    if pooling == "mean":
        return mean_pool(final, attention_mask)
    if pooling == "cls":
        return F.normalize(final[:, 0], p=2, dim=-1)
    raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")


def effects(clean: ModelOutput, ablated: ModelOutput, inputs: Inputs,
            pooling: str | None = None) -> dict[str, torch.Tensor]:
    """What removing heads changed, per batch item of `ablated` (clean is a batch of 1).

    tokens [batch]: 1 - mean cosine similarity of the final vectors over real tokens;
    sentence [batch]: 1 - cosine of the sentence embeddings (when `pooling` is given);
    loss [batch]: ablated text loss - clean text loss (decoders).
    """
    batch = ablated.final.shape[0]
    mask = inputs.attention_mask[:1].expand(batch, -1).bool()  # [batch, pos]
    cos = token_cosine(clean.final.expand_as(ablated.final), ablated.final)  # [batch, pos]
    out = {"tokens": 1 - (cos * mask).sum(-1) / mask.sum(-1)}
    if pooling is not None:
        a = sentence_embedding(clean.final, inputs.attention_mask[:1], pooling)  # [1, d]
        b = sentence_embedding(ablated.final, mask.long(), pooling)  # [batch, d]
        out["sentence"] = 1 - (a * b).sum(-1)
    if clean.logits is not None:
        ids = inputs.input_ids[:1].expand(batch, -1)
        base = text_loss(clean.logits, inputs.input_ids[:1], inputs.attention_mask[:1])  # [1]
        out["loss"] = text_loss(ablated.logits, ids, mask.long()) - base
    return out


METRICS = {  # what each effect measures, in plain words first
    "loss": "how much worse the model predicts the text (change in its loss: how surprised "
            "it is by each next token, on average, in nats; > 0: worse, < 0: better)",
    "tokens": "how far the final token vectors turned (1 − mean cosine similarity: 0 = "
              "not at all)",
    "sentence": "how far the sentence's meaning vector turned (1 − cosine similarity of the "
                "sentence embeddings: 0 = not at all)",
}


def sweep_chunk(cfg, n_pos: int, allowance: int | None = None) -> int:
    """How many ablated copies to run per batch: as many as fit `allowance` bytes of working
    memory (default cost.DEFAULT_ALLOWANCE; logits, MLP, attention scores: analysis/cost.py),
    at least 1 and at most 64."""
    return cost.chunk("sweep", cfg, n_pos, min(cost.SWEEP_MOST, cfg.n_heads), allowance)


def _forward_from(loaded, layer: int, resid: torch.Tensor, attention_mask: torch.Tensor,
                  fwd_hooks) -> ModelOutput:
    """The rest of the model from block `layer` on (the model's own forward_from), with the
    sweep's hooks, on the CPU. In a sweep the earlier blocks are the same for every copy, so
    they run once. resid: [batch, pos, d_model]; attention_mask: [batch, pos]."""
    out, _ = run_with_hooks(loaded, resid=resid, start=layer, attention_mask=attention_mask,
                            hooks=fwd_hooks)
    return ModelOutput(residual=out.residual.float().cpu(), final=out.final.float().cpu(),
                       pooled=None, logits=None if out.logits is None else out.logits.float().cpu())


def head_deltas(z: torch.Tensor, w_o: torch.Tensor, heads: torch.Tensor, mode: str,
                attention_mask: torch.Tensor) -> torch.Tensor:
    """What replacing head h's z (alone) adds to its layer's attention output, for each h in
    `heads`: (replacement − z_h) @ W_O[h], [len(heads), pos, d_model].

    The attention output is Σ_h z_h W_O[h] + b_O, so removing one head changes it by exactly
    this term. z: [1, head, pos, d_head] from the clean run; w_o: [head, d_head, d_model];
    attention_mask: [1, pos]. The replacement is that of `ablation_hooks`."""
    zh = z[0, heads]  # [b, pos, d_head]
    if mode == "zero":
        replacement = torch.zeros_like(zh)
    else:
        m = attention_mask[0].to(zh.device, zh.dtype)[None, :, None]  # [1, pos, 1]
        replacement = ((zh * m).sum(1, keepdim=True) / m.sum(1, keepdim=True)).expand_as(zh)
    return torch.bmm(replacement - zh, w_o[heads].to(zh.dtype))  # [b, pos, d_model]


def importance_sweep(loaded, inputs: Inputs, mode: str = "zero", pooling: str | None = None,
                     chunk: int | None = None,
                     progress: Callable[[int, int], None] | None = None,
                     reuse_attention: bool = True,
                     allowance: int | None = None) -> dict[str, np.ndarray]:
    """Remove each head on its own and measure the effect: metric -> [n_layers, head].

    Metrics are those of `effects` (tokens always; sentence with `pooling`; loss for decoders).
    The blocks before a head's layer are not affected by removing it, so the clean run's
    input to that layer is reused and only the blocks from there on run again. Up to `chunk`
    heads of one layer run per forward pass as a batch (default: as many as fit `allowance`
    bytes, `sweep_chunk`); chunk=1
    runs one pass per head. `progress(done, total)` is called after each pass.

    reuse_attention (default): the head's own layer computes its attention once, for the
    clean text, and each copy's attention output is the clean one plus `head_deltas` (a
    hook on hook_attn_out widens the batch of 1 to one row per removed head); only the MLP
    and the later blocks run per copy. False: every copy recomputes that layer's attention
    with its z replaced (`ablation_hooks`), as before. Both give the same numbers up to
    float32 rounding (~1e-7).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    cfg = loaded.cfg
    n_layers, n_heads = cfg.n_layers, cfg.n_heads
    chunk = chunk or sweep_chunk(cfg, inputs.input_ids.shape[1], allowance)
    names = hook_names(cfg)
    # resid_pre [1, pos, d_model], z [1, head, pos, d_head]
    clean, cache = forward(loaded, inputs, keep={*names.every_layer("resid", "pre"),
                                                 *names.every_layer("attn", "z")})
    results: dict[str, list[torch.Tensor]] = {}
    done = 0
    for layer in range(n_layers):
        x = cache[names.resid(layer, "pre")]  # [1, pos, d_model]
        for start in range(0, n_heads, chunk):
            heads = torch.arange(start, min(start + chunk, n_heads))  # [b]
            if reuse_attention:
                out = _sweep_pass_reused(loaded, layer, x, cache, heads, mode, inputs)
            else:
                out = _sweep_pass_full(loaded, layer, x, heads, mode, inputs)
            for name, value in effects(clean, out, inputs, pooling).items():
                results.setdefault(name, []).append(value)
            done += heads.numel()
            if progress is not None:
                progress(done, n_layers * n_heads)
    return {name: torch.cat(parts).reshape(n_layers, n_heads).double().numpy()
            for name, parts in results.items()}


def _sweep_pass_reused(loaded, layer: int, x: torch.Tensor, cache: dict, heads: torch.Tensor,
                       mode: str, inputs: Inputs) -> ModelOutput:
    """One copy per head in `heads`, each without that head, from block `layer` on: the
    block's attention runs once on the clean input x [1, pos, d_model], then its output
    becomes [len(heads), pos, d_model] (clean + each head's delta) and the rest runs batched."""
    w_o = loaded.model.blocks[layer].attn.W_O.detach()  # [head, d_head, d_model], read only
    names = hook_names(loaded.cfg)
    z = cache[names.attn(layer, "z")]  # [1, head, pos, d_head]
    deltas = head_deltas(z, w_o, heads, mode, inputs.attention_mask)  # [b, pos, d_model]

    def widen(attn_out: torch.Tensor, name: str) -> torch.Tensor:  # [1, ...] -> [b, ...]
        return attn_out + deltas.to(attn_out.device, attn_out.dtype)

    out = _forward_from(loaded, layer, x, inputs.attention_mask,
                        [(names.out(layer, "attn"), widen)])
    if out.final.shape[0] != heads.numel():  # the block broadcast the widened output
        raise RuntimeError("the attention output did not widen the batch")
    return out


def _sweep_pass_full(loaded, layer: int, x: torch.Tensor, heads: torch.Tensor, mode: str,
                     inputs: Inputs) -> ModelOutput:
    """The same copies, each recomputing block `layer` with its z replaced by the hook."""
    batch = heads.numel()
    chosen = torch.zeros(batch, loaded.cfg.n_heads, dtype=torch.bool)  # [b, head]
    chosen[torch.arange(batch), heads] = True  # copy i loses head heads[i]
    copies = inputs.repeat(batch)
    return _forward_from(loaded, layer, x.expand(batch, -1, -1), copies.attention_mask,
                         ablation_hooks({layer: chosen}, mode, copies.attention_mask,
                                        hook_names(loaded.cfg)))


def model_directory(name: str) -> Path | None:
    """Where a bundled name or a local directory lives (None for anything else: no download)."""
    from model.loading import resolve
    from model.registry import BUNDLED

    if name in BUNDLED or Path(name).expanduser().is_dir():
        return resolve(name)
    return None


CANDIDATES = 8  # top next tokens taken from each run, per position


def ablation_report(loaded, inputs: Inputs, heads: Iterable[Head], mode: str,
                    pooling: str | None) -> dict:
    """What removing `heads` changed, as the ablation page shows it (numpy, small):
    cosine [pos] of each final vector with the clean one; for sentence models (pooling) the
    sentence embeddings' cosine; for decoders the mean loss before and after, each position's
    next-token loss, and the CANDIDATES most likely next tokens of each run with their
    probabilities before and after ([pos, 2 * CANDIDATES])."""
    clean = forward(loaded, inputs)
    ablated = run_ablated(loaded, inputs, heads, mode)
    out = {"cosine": token_cosine(clean.final, ablated.final)[0].numpy(), "pooling": pooling}
    if pooling is not None:
        a, b = (sentence_embedding(o.final, inputs.attention_mask, pooling)
                for o in (clean, ablated))
        out["sentence"] = float((a * b).sum())
    if clean.logits is not None:
        args = (inputs.input_ids, inputs.attention_mask)
        out["loss"] = (float(text_loss(clean.logits, *args)[0]),
                       float(text_loss(ablated.logits, *args)[0]))
        out["nll"] = [next_token_losses(o.logits, *args)[0].numpy() for o in (clean, ablated)]
        p0, p1 = clean.logits[0].softmax(-1), ablated.logits[0].softmax(-1)  # [pos, vocab]
        ids = np.concatenate([p0.topk(CANDIDATES, -1).indices.numpy(),
                              p1.topk(CANDIDATES, -1).indices.numpy()], axis=1)  # [pos, 2k]
        out["candidates"] = ids
        out["p_clean"] = np.take_along_axis(p0.numpy(), ids, axis=1)  # [pos, 2k]
        out["p_ablated"] = np.take_along_axis(p1.numpy(), ids, axis=1)  # [pos, 2k]
    return out
