"""Why this score in an encoder–decoder's decoder (analysis/seq2seq_score_parts.py): on tiny
random-weight T5, T5 v1.1, BART and Marian folders saved by transformers (tests/tiny_seq2seq.py)
and loaded the way a user's folder is, and on the project's own tiny-reverse, at every decoder
layer and a sample of heads and cells, the query-part × key-part terms of a self-attention
score (plus T5's bias by distance) and of a cross-attention score add up to the engine's own
pre-softmax score; and two terms computed by hand from Hugging Face's modules (their norms'
inputs read by hooks on Hugging Face's own forward pass), never through analysis/ code."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tiny_seq2seq
from analysis.score_parts import needed, part_label
from analysis.seq2seq_score_parts import decompose_decoder_cell, needed_decoder
from analysis.stream_parts import GROUPS, group_of
from model import load_model

TEXT = "The cat sat on the mat. A dog chased the ball"
OWN_TEXT = "abcabcabxy"
RTOL = 1e-5  # as tests/unit/test_score_parts.py: of the score, or of 1 for a score near 0
FAMILIES = ["t5", "t5_gated", "bart", "marian", "tiny-reverse"]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= RTOL * max(1.0, abs(b))


@pytest.fixture(scope="module")
def runs():
    """family -> (loaded, trace): the run keeps what the attention page keeps for the view."""
    out = {}
    for family in FAMILIES:
        own = family.startswith("tiny-")
        lm = load_model(family if own else str(tiny_seq2seq.folder(family)), device="cpu")
        keep = needed(lm.cfg, needed_decoder(lm.model.dec_cfg))
        out[family] = lm, lm.run(OWN_TEXT if own else TEXT, keep=keep)
    return out


def _cells(stack: str, n_out: int, n_src: int) -> list[tuple[int, int]]:
    if stack == "decoder":
        return [(n_out - 1, 0), (n_out - 1, n_out - 2), (n_out // 2, n_out // 2),
                (n_out // 2, 1), (2, 1)]
    return [(n_out - 1, 0), (n_out - 1, n_src - 1), (n_out // 2, n_src // 2), (0, 1), (2, 2)]


@pytest.mark.parametrize("stack", ["decoder", "cross"])
@pytest.mark.parametrize("family", FAMILIES)
def test_the_parts_add_up_to_the_engines_score(family, stack, runs):
    lm, trace = runs[family]
    dec = lm.model.dec_cfg
    n_out, n_src = len(trace.decoder_tokens[0]), trace.n_tokens
    assert n_out > 4 and n_src > 4
    heads = sorted({0, dec.n_heads // 2, dec.n_heads - 1})
    checked = 0
    for layer in range(dec.n_layers):
        for head in heads:
            for query, key in _cells(stack, n_out, n_src):
                cell = decompose_decoder_cell(lm, trace, stack, layer, head, query, key)
                checked += 1
                assert close(cell.total(), cell.score), (layer, head, query, key)
                qg, kg, grouped = cell.grouped()
                assert close(float(grouped.sum()) + sum(cell.extra.values()), cell.score)
                assert set(qg) <= set(GROUPS) and set(kg) <= set(GROUPS)
                t5_bias = stack == "decoder" and family.startswith("t5")
                assert ("relative position" in cell.extra) == t5_bias
                if layer > 0:  # the decoder's earlier layers are among the query's parts
                    assert {"attention", "cross", "mlp"} <= set(qg)
                if stack == "cross":  # the key is the encoder's: its heads and MLPs
                    assert "cross" not in kg and {"attention", "mlp"} <= set(kg)
    assert checked == dec.n_layers * len(heads) * 5


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_every_kind_of_decoder_part_carries_something(family, runs):
    """Leaving out the earlier cross-attention heads, the self-attention heads or the MLPs
    would break the sum: none of them is silently zero."""
    lm, trace = runs[family]
    n_out = len(trace.decoder_tokens[0])
    cell = decompose_decoder_cell(lm, trace, "cross", lm.model.dec_cfg.n_layers - 1, 1,
                                  n_out - 1, 2)
    for group in ("attention", "cross", "mlp"):
        rows = [a for a, k in enumerate(cell.q_keys) if group_of(k) == group]
        assert abs(float(cell.grid[rows].sum())) > 100 * RTOL * max(1.0, abs(cell.score))


def test_the_parts_are_named_by_their_side(runs):
    lm, trace = runs["bart"]
    cell = decompose_decoder_cell(lm, trace, "cross", 2, 0, 4, 3)
    q = {part_label(k, "decoder") for k in cell.q_keys}
    k = {part_label(key, "encoder") for key in cell.k_keys}
    assert {"decoder token embedding", "decoder layer 0 self-attention head 1",
            "decoder layer 1 cross-attention head 2", "decoder layer 0 MLP",
            "query bias"} <= q
    assert {"encoder token embedding", "encoder layer 1 head 2", "key bias"} <= k
    assert len(q) == len(cell.q_keys) and len(k) == len(cell.k_keys)


def test_bad_cells_are_refused_in_words(runs):
    lm, trace = runs["marian"]
    with pytest.raises(ValueError, match="writes left to right"):
        decompose_decoder_cell(lm, trace, "decoder", 0, 0, 1, 4)
    with pytest.raises(ValueError, match="decoder layer must be"):
        decompose_decoder_cell(lm, trace, "cross", lm.model.dec_cfg.n_layers, 0, 1, 0)
    with pytest.raises(ValueError, match="key position must be"):
        decompose_decoder_cell(lm, trace, "cross", 0, 0, 1, trace.n_tokens)
    with pytest.raises(ValueError, match="self-attention or its cross-attention"):
        decompose_decoder_cell(lm, trace, "sideways", 0, 0, 1, 0)


# ----------------------------------------------------------------------------- by hand
def _norm_inputs(hf, kind, src, dec) -> dict:
    """Every norm module of Hugging Face's model -> its input [pos, d] in HF's own forward
    pass on (src, dec)."""
    seen, handles = {}, []
    for name, module in hf.named_modules():
        if isinstance(module, kind):
            handles.append(module.register_forward_hook(
                lambda m, args, out, name=name: seen.__setitem__(name, args[0][0].double())))
    with torch.no_grad():
        hf(input_ids=src, decoder_input_ids=dec)
    for h in handles:
        h.remove()
    return seen


def _ln(part, x, module):
    """A part through LayerNorm `module`, its scale frozen at x (both [d])."""
    return (part - part.mean()) / torch.sqrt(x.var(unbiased=False) + module.eps) * \
        module.weight.detach().double()


def _rms(part, x, module):
    """A part through T5's RMSNorm, its scale frozen at x."""
    return part / torch.sqrt(x.pow(2).mean() + module.variance_epsilon) * \
        module.weight.detach().double()


def _rows(linear, head: int, d_head: int) -> torch.Tensor:
    return linear.weight.detach().double()[head * d_head:(head + 1) * d_head]  # [d_head, d]


def _entry(cell, q_key, k_key) -> float:
    return float(cell.grid[cell.q_keys.index(q_key), cell.k_keys.index(k_key)])


def test_bart_cross_attention_by_hand(runs):
    """Decoder layer 1's cross-attention, head 4: the query's token and position parts
    through BART's five norms before it, the key's through the encoder's five, each norm's
    scale frozen at its input in Hugging Face's own run; and the two biases."""
    lm, trace = runs["bart"]
    _, hf = tiny_seq2seq.loaded("bart")
    src, dec = trace.input_ids[:1], trace.decoder_ids[:1]
    seen = _norm_inputs(hf, torch.nn.LayerNorm, src, dec)
    m = hf.model
    i, j, head, layer = 5, 3, 4, 1
    cross = m.decoder.layers[layer].encoder_attn
    d_head = cross.head_dim

    def through(part, pos, names):
        for name in names:
            part = _ln(part, seen["model." + name][pos], m.get_submodule(name))
        return part

    q_norms = ["decoder.layernorm_embedding", "decoder.layers.0.self_attn_layer_norm",
               "decoder.layers.0.encoder_attn_layer_norm", "decoder.layers.0.final_layer_norm",
               "decoder.layers.1.self_attn_layer_norm"]
    k_norms = ["encoder.layernorm_embedding"] + [f"encoder.layers.{n}.{w}" for n in range(2)
                                                 for w in ("self_attn_layer_norm",
                                                           "final_layer_norm")]
    assert not hf.config.scale_embedding  # BART: the token embedding as stored

    def emb(stack, ids, pos):
        return {("token",): stack.embed_tokens.weight.detach().double()[ids[0, pos]],
                ("position",): stack.embed_positions.weight.detach().double()[pos + 2]}

    q = {k: _rows(cross.q_proj, head, d_head) @ through(p, i, q_norms)
         for k, p in emb(m.decoder, dec, i).items()}
    k = {key: _rows(cross.k_proj, head, d_head) @ through(p, j, k_norms)
         for key, p in emb(m.encoder, src, j).items()}
    cell = decompose_decoder_cell(lm, trace, "cross", layer, head, i, j)
    for qk, qv in q.items():
        for kk, kv in k.items():
            assert _entry(cell, qk, kk) == pytest.approx(cross.scaling * float(qv @ kv),
                                                         rel=1e-5, abs=1e-7)
    b_q = cross.q_proj.bias.detach().double()[head * d_head:(head + 1) * d_head]
    b_k = cross.k_proj.bias.detach().double()[head * d_head:(head + 1) * d_head]
    assert _entry(cell, ("query bias",), ("key bias",)) == pytest.approx(
        cross.scaling * float(b_q @ b_k), rel=1e-9)


def test_t5_cross_attention_by_hand(runs):
    """T5 decoder layer 2's cross-attention, head 3: the query's token part through that
    layer's norm, the key's token part through the encoder's final norm (the frozen-norm
    convention the page states), T5's unscaled dot product."""
    from transformers.models.t5.modeling_t5 import T5LayerNorm

    lm, trace = runs["t5"]
    _, hf = tiny_seq2seq.loaded("t5")
    src, dec = trace.input_ids[:1], trace.decoder_ids[:1]
    seen = _norm_inputs(hf, T5LayerNorm, src, dec)
    i, j, head, layer = 6, 4, 3, 2
    block = hf.decoder.block[layer].layer[1]
    cross, d_head = block.EncDecAttention, hf.config.d_kv
    shared = hf.shared.weight.detach().double()
    q_part = _rms(shared[dec[0, i]], seen[f"decoder.block.{layer}.layer.1.layer_norm"][i],
                  block.layer_norm)
    final = hf.encoder.final_layer_norm
    k_part = _rms(shared[src[0, j]], seen["encoder.final_layer_norm"][j], final)
    want = float((_rows(cross.q, head, d_head) @ q_part) @ (_rows(cross.k, head, d_head)
                                                           @ k_part))
    cell = decompose_decoder_cell(lm, trace, "cross", layer, head, i, j)
    assert cell.scale == 1.0
    assert _entry(cell, ("token",), ("token",)) == pytest.approx(want, rel=1e-5, abs=1e-7)
    assert not np.isclose(want, 0.0)
