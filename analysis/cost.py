"""What a heavy analysis costs before it starts: its peak working memory (bytes) and its time,
from the model's config and the shapes (tokens, batch, steps) alone.

Working memory is what one chunk of an analysis allocates on top of the model and the cached
runs, and gives back when it ends. It is dominated by the attention-sized tensors
[batch, head, pos, pos]: a forward pass holds three of them at once inside a layer (q·k,
the scaled scores and the softmax pattern: model/attention.py, `Attention.attend`), and a pass
that is differentiated (gradients, integrated gradients) keeps every layer's pattern for the
backward pass, plus its inputs to each matrix multiply, and needs three more attention-sized
gradients at the layer being differentiated. The counts below follow those tensors in the
model's code; `SAFETY` covers the allocator (freed blocks reused late, small tensors left
out). tests/unit/test_analysis_cost.py measures the peak RSS of real runs against them.

Every estimate is for ONE chunk: `largest_chunk` picks how many steps, copies or positions
run at once so that a chunk fits an allowance of bytes (ui/working_memory.py hands those out).

Time: the multiply-adds of the matrix multiplies, and the elements of the attention-sized
tensors, each at a rate measured on the 2-core benchmark machine (bench/bench_effect_memory.py,
BENCHMARKS.md), plus what each pass costs beyond its arithmetic: seconds of one idle core, the
work's size. analysis/pace.py turns that into the time on this machine as it is now (its load,
and how long recent runs of the same kind took), which is what a page says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

FLOAT_BYTES = 4  # the models run in float32
# The working memory an analysis may use when its caller says nothing (ui/working_memory.py
# hands out the server's allowance, ATTENTION_LAB_WORKING_MB, 512 MB by default)
DEFAULT_ALLOWANCE = 512 * 2**20
SAFETY = 1.25  # the allocator's slack over the tensors counted (measured: see the module doc)
# The benchmark machine, one torch thread (as a hosted server runs each pass): multiply-adds
# per second, and seconds per element of an attention-sized tensor in a forward pass (scale,
# mask, softmax: at MiniLM's sizes past ~100 tokens this is most of the time). A pass that is
# differentiated spends GRADIENT_ATTENTION times as long on them. Fitted to all-MiniLM-L6-v2
# at 128 to 512 tokens (bench/bench_effect_memory.py, BENCHMARKS.md).
MACS_PER_SECOND = 1.0e11
ATTENTION_SECONDS = 8.5e-9
GRADIENT_ATTENTION = 5.3
# Beyond the arithmetic: seconds per layer of one pass (Python, one call per operation),
# and an analysis's own bookkeeping (fitted to MiniLM at 13 tokens, where it is most of the
# time: bench/bench_effect_estimate.py, BENCHMARKS.md)
PASS_SECONDS = 2e-3
FIXED_SECONDS = 0.05


# ------------------------------------------------------------------------------ the parts
def _sizes(cfg, n_pos: int) -> tuple[int, int, int, int]:
    """Elements per batch item: one attention-sized tensor [head, pos, pos], one residual
    [pos, d_model], the MLP's hidden tensors [pos, d_mlp] (x3 for a gated MLP's gate, up and
    product), and the mask [pos, pos]."""
    attn = cfg.n_heads * n_pos * n_pos
    resid = n_pos * max(cfg.d_model, cfg.n_heads * cfg.d_head)
    mlp = 0 if cfg.attn_only else n_pos * cfg.d_mlp * (3 if cfg.gated_mlp else 2)
    return attn, resid, mlp, n_pos * n_pos


def _bytes(elements: float) -> int:
    return int(elements * FLOAT_BYTES * SAFETY)


def forward_elements(cfg, n_pos: int) -> int:
    """Peak elements of one no-grad forward pass, per batch item: inside one layer, q·k, scores
    and pattern at once, with the temporaries of the masked add and the softmax (measured:
    five attention-sized tensors), q, k, v, z and the residuals, the MLP's hidden tensors; and
    the mask."""
    attn, resid, mlp, mask = _sizes(cfg, n_pos)
    return 5 * attn + 8 * resid + mlp + mask


def backward_elements(cfg, n_pos: int) -> int:
    """Peak elements of one forward + backward pass, per batch item: every layer keeps its
    pattern, its matrix-multiply inputs (q, k, v, z, the norms' and MLP's inputs) for the
    backward pass; the layer being differentiated adds its attention-sized gradients and the
    softmax backward's temporaries (measured at 256 to 512 tokens: eight attention-sized
    tensors' worth, with the allocator's reuse of blocks that size)."""
    attn, resid, mlp, mask = _sizes(cfg, n_pos)
    kept = cfg.n_layers * (attn + 10 * resid + mlp)
    return kept + 8 * attn + 6 * resid + mlp + mask


def logits_elements(cfg, n_pos: int) -> int:
    """A decoder's logits [pos, vocab] per batch item (twice: the float32 copy to the CPU)."""
    return 2 * n_pos * cfg.d_vocab if cfg.has_lm_head else 0


# ------------------------------------------------------------------------- one chunk each
def integrated_gradients_bytes(cfg, n_pos: int, steps: int) -> int:
    """One chunk of integrated gradients: `steps` points of the path through the model and
    back at once (gradient × input is one step)."""
    return _bytes(steps * backward_elements(cfg, n_pos))


def gradient_x_input_bytes(cfg, n_pos: int) -> int:
    return integrated_gradients_bytes(cfg, n_pos, 1)


def occlusion_bytes(cfg, n_pos: int, variants: int) -> int:
    """One chunk of occlusion: `variants` copies of the text, each missing one token, in one
    no-grad forward pass."""
    return _bytes(variants * forward_elements(cfg, n_pos))


def effect_trace_bytes(cfg, n_pos: int) -> int:
    """The effect page's own run (every layer's pattern and v kept) and its attention-norm rows
    (float64 [head, pos, pos] products, one layer at a time)."""
    attn, resid, _, _ = _sizes(cfg, n_pos)
    kept = cfg.n_layers * (attn + resid)
    return _bytes(kept + max(forward_elements(cfg, n_pos), 12 * attn))


def effect_bytes(cfg, n_pos: int, ig_steps: int, occlusion_variants: int | None) -> int:
    """The effect page's peak: the largest of its stages, which run one after another."""
    parts = [effect_trace_bytes(cfg, n_pos), gradient_x_input_bytes(cfg, n_pos),
             integrated_gradients_bytes(cfg, n_pos, ig_steps)]
    if occlusion_variants:
        parts.append(occlusion_bytes(cfg, n_pos, occlusion_variants))
    return max(parts)


def sweep_bytes(cfg, n_pos: int, copies: int) -> int:
    """One chunk of the ablation sweep: `copies` ablated copies from one layer on, no grad,
    with their final vectors (and a decoder's logits) kept for the effect."""
    per_item = forward_elements(cfg, n_pos) + logits_elements(cfg, n_pos) + 4 * n_pos * cfg.d_model
    return _bytes(copies * per_item)


def patching_bytes(cfg, n_pos: int, copies: int) -> int:
    """One chunk of a patching grid: `copies` patched copies of the corrupted run from one
    layer on, no grad (the metric reads two logits only, never the full vocabulary)."""
    return _bytes(copies * (forward_elements(cfg, n_pos) + 4 * n_pos * cfg.d_model))


def full_run_bytes(cfg, n_pos: int, batch: int = 1) -> int:
    """The walkthrough's run (analysis/walkthrough `keep`): per layer the pattern, q, k, v, z,
    the five residual-sized block hooks, the two norms' outputs (and the rotated q, k), and the
    MLP's hidden tensors are kept, counted exactly; q·k and the scores are not kept (derived
    for the layer shown) but exist in each layer's forward pass, with the softmax's temporary.
    Plus a decoder's logits."""
    attn, resid, mlp, mask = _sizes(cfg, n_pos)
    per_layer = attn + (13 if cfg.positions == "rotary" else 11) * resid + mlp
    kept = cfg.n_layers * per_layer + 4 * resid  # and the embeddings' four
    passing = 4 * attn + 8 * resid + mlp + mask + logits_elements(cfg, n_pos)
    return batch * (kept * FLOAT_BYTES + _bytes(passing))


# ------------------------------------------------------------------------------- chunking
def largest_chunk(cost: Callable[[int], int], allowance: int, most: int) -> int:
    """The largest chunk in [1, most] whose cost(chunk) fits `allowance` bytes; 1 when even
    one does not fit (the caller decides whether to run it: see ui/working_memory.py)."""
    if most <= 1 or cost(1) > allowance:
        return 1
    low, high = 1, most  # cost(low) fits; costs grow with the chunk
    while low < high:
        mid = (low + high + 1) // 2
        if cost(mid) <= allowance:
            low = mid
        else:
            high = mid - 1
    return low


CHUNKED = {"integrated_gradients": integrated_gradients_bytes, "occlusion": occlusion_bytes,
           "sweep": sweep_bytes, "patching": patching_bytes}


def chunk(kind: str, cfg, n_pos: int, most: int, allowance: int | None = None) -> int:
    """Steps, variants or copies per pass of a `kind` of CHUNKED: as many as fit `allowance`
    bytes (default DEFAULT_ALLOWANCE), at least 1, at most `most`."""
    bytes_of = CHUNKED[kind]
    budget = DEFAULT_ALLOWANCE if allowance is None else allowance
    return largest_chunk(lambda b: bytes_of(cfg, n_pos, b), budget, most)


@dataclass(frozen=True)
class Plan:
    """What one heavy analysis will take before it starts: its peak working memory with the
    chunks that fit the allowance (`most`) and with the smallest chunks (`least`: it cannot
    run in less), and about how many seconds of one core."""

    most: int
    least: int
    seconds: float
    kind: str = "analysis"  # which analysis: recent runs of the same kind calibrate its time


OCCLUSION_MOST = 64  # variants per pass at most (analysis/effect.py)
SWEEP_MOST = 64  # ablated copies per pass at most (analysis/ablation.py)


def effect_plan(cfg, n_pos: int, steps: int, occlusion: bool,
                allowance: int | None = None) -> Plan:
    """The effect page's six methods for a target that sees `n_pos` tokens."""
    ig_chunk = chunk("integrated_gradients", cfg, n_pos, steps, allowance)
    occ_chunk = chunk("occlusion", cfg, n_pos, min(OCCLUSION_MOST, n_pos), allowance) \
        if occlusion else None
    most = effect_bytes(cfg, n_pos, ig_chunk, occ_chunk)
    least = effect_bytes(cfg, n_pos, 1, 1 if occlusion else None)
    passes = effect_passes(n_pos, steps, ig_chunk, occ_chunk)
    return Plan(most, least, effect_seconds(cfg, n_pos, steps, occlusion)
                + overhead_seconds(cfg, *passes), "effect")


def sweep_plan(cfg, n_pos: int, allowance: int | None = None) -> Plan:
    """The ablation page's importance sweep (every head removed in turn); the clean run's
    block inputs and z are held meanwhile."""
    held = _bytes(2 * cfg.n_layers * _sizes(cfg, n_pos)[1])
    most = sweep_bytes(cfg, n_pos, chunk("sweep", cfg, n_pos, min(SWEEP_MOST, cfg.n_heads),
                                         allowance))
    return Plan(held + most, held + sweep_bytes(cfg, n_pos, 1), sweep_seconds(cfg, n_pos),
                "sweep")


def patching_plan(cfg, n_pos: int, allowance: int | None = None) -> Plan:
    """The patching page's two grids; both runs' block inputs, outputs and z are held."""
    held = _bytes(2 * 3 * cfg.n_layers * _sizes(cfg, n_pos)[1])
    most = patching_bytes(cfg, n_pos, chunk("patching", cfg, n_pos, n_pos, allowance))
    return Plan(held + most, held + patching_bytes(cfg, n_pos, 1),
                patching_seconds(cfg, n_pos), "patching")


def full_run_plan(cfg, n_pos: int, batch: int = 1) -> Plan:
    """The walkthrough's run that keeps every hook: one piece, it cannot be chunked."""
    size = full_run_bytes(cfg, n_pos, batch)
    return Plan(size, size, forward_seconds(cfg, n_pos, batch), "full_run")


# ------------------------------------------------------------- encoder–decoder patching
def decoder_elements(dec_cfg, n_src: int, n_out: int) -> int:
    """Peak elements of an encoder–decoder's decoder reading `n_out` tokens over an encoded
    source of `n_src`, no grad, per batch item: inside one layer the larger of its
    self-attention [head, out, out] and its cross-attention [head, out, src] tensors (five at
    once, as in `forward_elements`), residuals, MLP and mask; the memory with cross-attention's
    keys and values [src, d_model]; the logits [out, vocab] of every position (twice: a bias
    added to them)."""
    _, resid, mlp, mask = _sizes(dec_cfg, n_out)
    attn = 5 * dec_cfg.n_heads * n_out * max(n_out, n_src)
    return attn + 8 * resid + mlp + mask + 3 * n_src * dec_cfg.d_model \
        + 2 * n_out * dec_cfg.d_vocab


def seq2seq_patching_bytes(cfg, dec_cfg, n_src: int, n_out: int, copies: int,
                           encoder: bool) -> int:
    """One chunk of an encoder–decoder's patching grid, `copies` patched copies at once: the
    encoder grid runs the encoder from one layer on and then the decoder; the decoder grids
    (heads, residual stream) run the decoder alone."""
    dec = decoder_elements(dec_cfg, n_src, n_out)
    if encoder:
        per_copy = max(forward_elements(cfg, n_src), dec) + 4 * n_src * cfg.d_model
    else:
        per_copy = dec + 4 * n_out * dec_cfg.d_model
    return _bytes(copies * per_copy)


def seq2seq_chunk(cfg, dec_cfg, n_src: int, n_out: int, most: int, encoder: bool,
                  allowance: int | None = None) -> int:
    """Patched copies per pass of an encoder–decoder's grid: as many as fit `allowance`."""
    budget = DEFAULT_ALLOWANCE if allowance is None else allowance
    return largest_chunk(lambda b: seq2seq_patching_bytes(cfg, dec_cfg, n_src, n_out, b,
                                                          encoder), budget, most)


def seq2seq_patching_plan(cfg, dec_cfg, n_src: int, n_out: int,
                          allowance: int | None = None) -> Plan:
    """The encoder–decoder patching page's grids for a source of `n_src` tokens and an output
    of `n_out` (the decoder reads up to the metric's position, unknown before the two runs:
    all `n_out` are counted). Both runs' kept activations are held (encoder: block inputs,
    outputs and z; decoder: block inputs, the last output, self- and cross-attention z); the
    two full runs keep their logits and float64 copies while the metric is chosen."""
    enc_resid, dec_resid = _sizes(cfg, n_src)[1], _sizes(dec_cfg, n_out)[1]
    held = _bytes(2 * (3 * cfg.n_layers * enc_resid + (3 * dec_cfg.n_layers + 1) * dec_resid))
    runs = _bytes(max(forward_elements(cfg, n_src), decoder_elements(dec_cfg, n_src, n_out))
                  + 6 * n_out * dec_cfg.d_vocab)

    def peak(enc_copies: int, dec_copies: int) -> int:
        return held + max(runs, seq2seq_patching_bytes(cfg, dec_cfg, n_src, n_out, enc_copies,
                                                       True),
                          seq2seq_patching_bytes(cfg, dec_cfg, n_src, n_out, dec_copies, False))

    most = peak(seq2seq_chunk(cfg, dec_cfg, n_src, n_out, n_src, True, allowance),
                seq2seq_chunk(cfg, dec_cfg, n_src, n_out, max(n_out, dec_cfg.n_heads), False,
                              allowance))
    return Plan(most, peak(1, 1), seq2seq_patching_seconds(cfg, dec_cfg, n_src, n_out),
                "seq2seq_patching")


# ---------------------------------------------------------------------------------- time
def matmul_work(cfg, n_pos: int) -> float:
    """Multiply-adds of the matrix multiplies of one forward pass of one text (q, k, v and
    output projections, the MLP)."""
    d, dh = cfg.d_model, cfg.d_head
    proj = n_pos * d * dh * (2 * cfg.n_heads + 2 * cfg.n_kv_heads)
    mlp = 0 if cfg.attn_only else n_pos * d * cfg.d_mlp * (3 if cfg.gated_mlp else 2)
    return float(cfg.n_layers * (proj + mlp))


def attention_work(cfg, n_pos: int) -> float:
    """Elements of the attention-sized tensors of one forward pass of one text."""
    return float(cfg.n_layers * cfg.n_heads * n_pos * n_pos)


def forward_seconds(cfg, n_pos: int, batch: int = 1) -> float:
    return batch * (matmul_work(cfg, n_pos) / MACS_PER_SECOND
                    + attention_work(cfg, n_pos) * ATTENTION_SECONDS)


def gradient_seconds(cfg, n_pos: int, batch: int = 1) -> float:
    """A forward and a backward pass: three times the multiplies, and the attention-sized
    tensors written and read again (softmax's backward) GRADIENT_ATTENTION times as long."""
    return batch * (3 * matmul_work(cfg, n_pos) / MACS_PER_SECOND
                    + attention_work(cfg, n_pos) * ATTENTION_SECONDS * GRADIENT_ATTENTION)


def effect_seconds(cfg, n_pos: int, steps: int, occlusion: bool) -> float:
    """The effect page's compute: its run, gradient × input, integrated gradients (`steps`
    points forward and back, two more forwards), occlusion (one pass per token, and the
    text's own), and a decoder's next-token logits at the target for each of them."""
    forwards = 1 + 2 + (1 + n_pos if occlusion else 0)
    logits = (forwards + 3 * (1 + steps)) * cfg.d_model * cfg.d_vocab if cfg.has_lm_head else 0
    return (forward_seconds(cfg, n_pos, forwards) + gradient_seconds(cfg, n_pos, 1 + steps)
            + logits / MACS_PER_SECOND)


def effect_passes(n_pos: int, steps: int, ig_chunk: int,
                  occ_chunk: int | None) -> tuple[int, int]:
    """Passes through the model the effect page makes, forward only and forward + backward:
    its run, integrated gradients' two ends, occlusion's own value and its chunks; gradient ×
    input and integrated gradients' chunks."""
    forwards = 1 + 2 + (1 + -(-n_pos // occ_chunk) if occ_chunk else 0)
    return forwards, 1 + -(-steps // ig_chunk)


def overhead_seconds(cfg, forwards: int, backwards: int) -> float:
    """What a pass costs beyond its arithmetic (Python, one call per operation, the hooks),
    per layer; a backward pass twice over; and the page's own sums (rows, correlations)."""
    return cfg.n_layers * PASS_SECONDS * (forwards + 3 * backwards) + FIXED_SECONDS


def sweep_seconds(cfg, n_pos: int) -> float:
    """Every head removed in turn: about half the model runs per head (the later layers)."""
    return forward_seconds(cfg, n_pos, 1 + cfg.n_layers * cfg.n_heads // 2)


def patching_seconds(cfg, n_pos: int) -> float:
    """Both grids: half the model per cell of the residual grid and of the head grid."""
    cells = (cfg.n_layers + 1) * n_pos + cfg.n_layers * cfg.n_heads
    return forward_seconds(cfg, n_pos, 2 + cells // 2)


def decoder_seconds(dec_cfg, n_src: int, n_out: int, batch: int = 1) -> float:
    """An encoder–decoder's decoder over an encoded source: its own layers, cross-attention's
    projections and [head, out, src] tensors, and the logits."""
    d, dh, h = dec_cfg.d_model, dec_cfg.d_head, dec_cfg.n_heads
    macs = dec_cfg.n_layers * 2 * (n_src + n_out) * d * dh * h + n_out * d * dec_cfg.d_vocab
    cross = dec_cfg.n_layers * h * n_out * n_src
    return forward_seconds(dec_cfg, n_out, batch) + batch * (
        macs / MACS_PER_SECOND + cross * ATTENTION_SECONDS)


def seq2seq_patching_seconds(cfg, dec_cfg, n_src: int, n_out: int) -> float:
    """Two full runs; per encoder cell half the encoder and the whole decoder; per cell of the
    two head grids and of the decoder's residual grid the whole decoder."""
    decoder = decoder_seconds(dec_cfg, n_src, n_out)
    encoder = forward_seconds(cfg, n_src)
    enc_cells = (cfg.n_layers + 1) * n_src
    dec_cells = 2 * dec_cfg.n_layers * dec_cfg.n_heads + (dec_cfg.n_layers + 1) * n_out
    return 2 * (encoder + decoder) + enc_cells * (encoder / 2 + decoder) + dec_cells * decoder
