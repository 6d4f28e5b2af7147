"""The real bundled MiniLM (all-MiniLM-L6-v2), where realism is the point: end-to-end parity
with transformers' AutoModel, and one pinned slice of one head's pattern.

Tolerance: atol = rtol = 1e-5, as in test_model_parity.py. The same float32 operations in the
same order give bit-identical results here (measured difference 0 on every tensor); hidden
states reach ~10 in size, so rtol 1e-5 allows ~1e-4 absolute there, still far below what a
real mistake changes.
"""

from __future__ import annotations

import torch
from torch.testing import assert_close

TOL = dict(atol=1e-5, rtol=1e-5)  # see the module docstring
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
    assert_close(trace.hidden_states, torch.stack(out.hidden_states, 1), **TOL)
    assert_close(trace.final, out.last_hidden_state, **TOL)
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
