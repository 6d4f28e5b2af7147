"""The real bundled MiniLM (all-MiniLM-L6-v2), where realism is the point: end-to-end parity
with transformers' AutoModel, and one pinned slice of one head's pattern.

Tolerance: atol = rtol = 1e-5, as in test_model_parity.py. The same float32 operations in the
same order give bit-identical results on some CPUs (measured difference 0 on every tensor); on
an AMD EPYC with AVX-512 our per-head matmuls and HF's fused linear layers take different
kernels, and real tokens differ by up to 3e-6. Hidden states reach ~10 in size, so rtol 1e-5
allows ~1e-4 absolute there, still far below what a real mistake changes.

Padded positions of a batch: their hidden states are the [PAD] token's own path through the
model (no real token attends to them). There, rounding grows through the six layers to 1.1e-4
(2.4e-5 of the row's largest value) on that CPU, so they are compared at PAD_TOL; a mistake in
masking or in a layer moves them by far more, and real tokens keep TOL.
"""

from __future__ import annotations

import torch
from torch.testing import assert_close

TOL = dict(atol=1e-5, rtol=1e-5)  # see the module docstring
PAD_TOL = dict(atol=5e-4, rtol=1e-4)  # padded positions only: see the module docstring
SENTENCES = [
    "The cat sat on the mat.",
    "Attention lets every token look at every other token, even far away ones.",
    "Paris is the capital of France.",
]


def test_minilm_config_is_the_published_architecture(minilm):
    cfg = minilm.cfg
    assert (cfg.family, cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_mlp) == (
        "bert", 6, 12, 384, 1536)
    assert (cfg.n_ctx, cfg.causal, cfg.block) == (512, False, "post_ln")


def test_minilm_matches_hf_automodel_on_a_padded_batch(minilm, minilm_hf):
    hf, tokenizer = minilm_hf
    trace = minilm.run(SENTENCES)
    enc = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert torch.equal(trace.input_ids, enc["input_ids"])  # the same tokens, the same padding
    assert torch.equal(trace.attention_mask, enc["attention_mask"])
    assert (enc["attention_mask"] == 0).any()
    with torch.no_grad():
        out = hf(**enc, output_attentions=True, output_hidden_states=True)
    assert_close(trace.attentions, torch.stack(out.attentions, 1), **TOL)
    hidden = torch.stack(out.hidden_states, 1)  # [batch, layer, pos, d_model]
    real = enc["attention_mask"].bool()  # [batch, pos]
    assert_close(trace.hidden_states.transpose(1, 2)[real], hidden.transpose(1, 2)[real], **TOL)
    assert_close(trace.hidden_states.transpose(1, 2)[~real], hidden.transpose(1, 2)[~real],
                 **PAD_TOL)
    assert_close(trace.final[real], out.last_hidden_state[real], **TOL)
    assert_close(trace.pooled, out.pooler_output, **TOL)


def test_minilm_pinned_slice_of_one_head(minilm):
    """Hard-coded numbers computed once with transformers 5.23
    (AutoModel.from_pretrained(path, attn_implementation="eager"), output_attentions=True):
    layer 5, head 11, the query row of "cat" in "The cat sat on the mat.". This head attends
    from "cat" to itself. Pinned so a change in either library, or in the bundled weights, shows
    up even if both sides drift together. Tolerance 1e-5: the numbers are rounded to 6 decimals
    (error <= 5e-7), leaving room for another CPU's float32 summation order."""
    trace = minilm.run("The cat sat on the mat.")
    assert trace.tokens == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    expected = torch.tensor([0.021084, 0.001560, 0.926115, 0.016782, 0.000386, 0.001408,
                             0.030081, 0.001040, 0.001544])
    assert_close(trace.attention(5, 11)[2], expected, atol=1e-5, rtol=0)
