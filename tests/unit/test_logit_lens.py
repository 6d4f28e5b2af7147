"""The logit lens: the last layer is the model's real output; earlier layers by hand; its
figure, and its detail table of narrow text cells (token and probability in one cell)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.logit_lens import lens_logits, lens_probs, lens_unavailable, logit_lens
from viz.lens import DETAIL_TOKEN_CHARS, detail_columns

TEXT = "The cat sat on the mat because it was warm."


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_last_layer_is_the_models_output_distribution(tiny_dirs, tiny_models_loaded, family):
    from transformers import AutoModelForCausalLM

    loaded = tiny_models_loaded[family]
    trace = loaded.run(TEXT)
    last = lens_probs(loaded.model, trace.hidden_states[-1])  # [pos, vocab]
    torch.testing.assert_close(last, trace.logits[0].softmax(-1), atol=1e-6, rtol=0)
    # ... and Hugging Face's own model gives the same distribution (float32, 2 layers).
    hf = AutoModelForCausalLM.from_pretrained(tiny_dirs[family]).eval()
    with torch.no_grad():
        hf_probs = hf(trace.input_ids).logits[0].softmax(-1)
    torch.testing.assert_close(last, hf_probs, atol=1e-5, rtol=0)
    lens = logit_lens(loaded.model, trace.hidden_states, trace.token_ids, k=3)
    top, top_ids = trace.logits[0].softmax(-1).topk(3, dim=-1)
    torch.testing.assert_close(lens.top_probs[-1], top, atol=1e-6, rtol=0)
    assert torch.equal(lens.top_ids[-1, :, 0], top_ids[:, 0])


def test_an_early_layer_by_hand_gpt2(tiny_models_loaded):
    loaded = tiny_models_loaded["gpt2"]
    model = loaded.model
    trace = loaded.run(TEXT)
    x = trace.cache["blocks.0.hook_resid_post"][0].double()  # [pos, d_model]
    ln = model.ln_final
    normed = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True)
                                                        + ln.eps)
    normed = normed * ln.weight.double() + ln.bias.double()
    logits = normed @ model.embed.W_E.weight.double().T  # GPT-2 ties the unembedding to W_E
    torch.testing.assert_close(lens_logits(model, trace.hidden_states[1]).double(), logits,
                               atol=1e-4, rtol=1e-5)  # float32 LayerNorm and matmul vs float64


def test_an_early_layer_by_hand_llama(tiny_models_loaded):
    loaded = tiny_models_loaded["llama"]
    model = loaded.model
    trace = loaded.run(TEXT)
    x = trace.hidden_states[0].double()  # the embeddings, [pos, d_model]
    rms = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + model.ln_final.eps)
    logits = (rms * model.ln_final.weight.double()) @ model.unembed.weight.double().T
    torch.testing.assert_close(lens_logits(model, trace.hidden_states[0]).double(), logits,
                               atol=1e-4, rtol=1e-5)


def test_ranks_of_the_true_next_token(tiny_models_loaded):
    loaded = tiny_models_loaded["gpt2"]
    trace = loaded.run(TEXT)
    ids = trace.token_ids
    lens = logit_lens(loaded.model, trace.hidden_states, ids, k=5)
    n = trace.n_tokens
    assert lens.row_names[0] == "embeddings" and lens.row_names[-1] == "after layer 1"
    assert lens.n_rows == 3 and lens.top_ids.shape == (3, n, 5)
    assert torch.equal(lens.next_ids[:-1], ids[1:]) and lens.next_ids[-1] == -1
    for row in range(lens.n_rows):
        probs = lens_probs(loaded.model, trace.hidden_states[row])  # [pos, vocab]
        order = probs.argsort(dim=-1, descending=True)  # [pos, vocab]
        for pos in range(n - 1):
            rank = int((order[pos] == ids[pos + 1]).nonzero()) + 1
            assert int(lens.next_rank[row, pos]) == rank
            assert float(lens.next_prob[row, pos]) == pytest.approx(float(probs[pos, ids[pos + 1]]))
        assert lens.next_rank[row, -1] == 0 and torch.isnan(lens.next_prob[row, -1])
    assert (lens.top_probs[..., :-1] >= lens.top_probs[..., 1:]).all()  # sorted, best first
    assert (lens.next_rank[:, :-1] >= 1).all()


def test_encoders_are_refused_with_a_reason(minilm, tiny_models_loaded):
    reason = lens_unavailable(minilm.cfg, "minilm")
    assert reason is not None and "language-model head" in reason and "minilm" in reason
    assert "tiny-chars" in reason  # a decoder that loads offline, not only GPT-2
    assert lens_unavailable(tiny_models_loaded["gpt2"].cfg) is None
    with pytest.raises(ValueError, match="language-model head"):
        lens_logits(minilm.model, torch.zeros(1, 3, minilm.cfg.d_model))


def test_mismatched_ids_are_refused(tiny_models_loaded):
    loaded = tiny_models_loaded["gpt2"]
    trace = loaded.run(TEXT)
    with pytest.raises(ValueError, match="positions"):
        logit_lens(loaded.model, trace.hidden_states, trace.token_ids[:-1])


def test_lens_table_figure():
    from viz.lens import lens_table

    top = [[["<b>", "x"], ["Ġcat", "y"]], [["z", "w"], ["Ġdog", "v"]]]  # [row][pos][k]
    probs = np.array([[[0.6, 0.1], [0.3, 0.2]], [[0.5, 0.4], [0.9, 0.05]]])  # [row, pos, k]
    rank = np.array([[2, 0], [1, 0]])
    nprob = np.array([[0.1, np.nan], [0.5, np.nan]])
    fig = lens_table(["embeddings", "after layer 0"], ["Ġthe", "Ġcat"], top, probs,
                     ["Ġcat", ""], rank, nprob, first_position=7)
    heat = fig.data[0]
    assert list(heat.x) == ["7·␣the", "8·␣cat"]  # the window keeps the text's positions
    assert heat.text[0][0] == "&lt;b&gt;" and heat.text[1][1] == "␣dog"
    np.testing.assert_allclose(np.asarray(heat.z, dtype=float), probs[..., 0])
    assert "rank 2" in heat.customdata[0][0] and "no next" in heat.customdata[0][1]
    coloured = lens_table(["a", "b"], ["Ġthe", "Ġcat"], top, probs, ["Ġcat", ""], rank, nprob,
                          colour="next").data[0]
    np.testing.assert_allclose(np.asarray(coloured.z, dtype=float), nprob)
    with pytest.raises(ValueError, match="rows"):
        lens_table(["a"], ["Ġthe", "Ġcat"], top, probs, ["Ġcat", ""], rank, nprob)


def test_detail_columns_put_token_and_probability_in_one_cell():
    rows = ["embeddings", "after layer 0"]
    tokens = [["␣", "e", "a"], ["n", "a very long token indeed", "x"]]
    probs = np.array([[0.611, 0.387, 0.0015], [0.934, 0.017, 0.00000001]])
    cols = detail_columns(rows, tokens, probs, np.array([3, 1]), np.array([0.0015, 0.934]))
    assert list(cols) == ["layer", "#1", "#2", "#3", "true next"]  # no separate p columns
    assert cols["layer"] == rows
    assert cols["#1"] == ["␣ 61%", "n 93%"]
    assert cols["#3"] == ["a 0.15%", "x < 0.01%"]  # percent, never "1.5e-03"
    long = cols["#2"][1]
    assert long.startswith("a very") and "…" in long and long.endswith(" 1.7%")
    assert len(long.split(" 1.7%")[0]) == DETAIL_TOKEN_CHARS
    assert cols["true next"] == ["#3 · 0.15%", "#1 · 93%"]
    # the last position has no true next token: no such column
    assert "true next" not in detail_columns(rows, tokens, probs)
    with pytest.raises(ValueError):
        detail_columns(rows[:1], tokens, probs)
