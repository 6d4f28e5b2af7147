"""The all-heads measure of how positional a head is (analysis/positional_heads.py): a head
built to read only positions scores at least 0.95, one built to read only the words at most
0.05; on the trained induction model the previous-token heads are far more positional than
the induction heads."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from analysis.positional_heads import explained_share, positional_map
from model import load_model
from model.runner import LoadedModel

TEXT = "The cat sat on the mat. A dog chased the ball across the park!"


def _built(gpt2: LoadedModel, reads: str) -> LoadedModel:
    """A copy of the tiny GPT-2 whose token embeddings live in the first half of the
    dimensions and positions in the second; head 0 of layer 0 reads only one half ("position"
    or "words"), through projections whose columns sum to 0 (so LayerNorm's mean, which mixes
    the halves, cancels)."""
    model = copy.deepcopy(gpt2.model)
    d = model.cfg.d_model
    half = d // 2
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        model.embed.W_E.weight[:, half:] = 0
        model.embed.W_pos.weight[:, :half] = 0
        block = model.blocks[0]
        block.ln1.weight.fill_(1.0)
        block.ln1.bias.zero_()
        side = slice(half, d) if reads == "position" else slice(0, half)
        for w, b in ((block.attn.W_Q, block.attn.b_Q), (block.attn.W_K, block.attn.b_K)):
            a = torch.randn(half, w.shape[-1], generator=g)
            w[0].zero_()
            w[0][side] = a - a.mean(0)
            b[0].zero_()
    return LoadedModel(f"built-{reads}", model, gpt2.tokenizer, torch.device("cpu"))


@pytest.mark.parametrize("reads, low, high", [("position", 0.95, 1.0), ("words", 0.0, 0.05)])
def test_a_head_built_to_read_one_thing(reads, low, high, tiny_models_loaded):
    lm = _built(tiny_models_loaded["gpt2"], reads)
    share = positional_map(lm, lm.run(TEXT))
    assert share.shape == (lm.cfg.n_layers, lm.cfg.n_heads)
    assert low <= share[0, 0] <= high


def test_previous_token_heads_are_more_positional_than_induction_heads():
    lm = load_model("tiny-induction")
    share = positional_map(lm, lm.run("the query looks at abcdefgabcdefg"))
    assert np.all((share >= 0) & (share <= 1))
    assert share[0].min() > share[1].max() + 0.3  # layer 0: previous token; layer 1: induction


def test_the_share_is_the_explained_spread():
    scores = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 4.0]], dtype=torch.float64)
    allowed = torch.ones(2, 3, dtype=torch.bool)
    assert explained_share(scores, scores + 7.0, allowed) == pytest.approx(1.0)  # shifts vanish
    assert explained_share(scores, torch.zeros_like(scores), allowed) == 0.0
    half = explained_share(scores, scores / 2, allowed)
    assert half == pytest.approx(0.75)  # 1 − (1/2)²
    hidden = allowed.clone()
    hidden[1, 2] = False  # a hidden key does not count
    assert explained_share(scores, torch.zeros_like(scores), hidden) == 0.0


@pytest.mark.parametrize("family", ["bert", "llama", "qwen3", "gemma2", "t5"])
def test_every_kind_of_position_gets_a_share(family, tiny_models_loaded):
    import tiny_decoders
    import tiny_seq2seq

    lm = tiny_models_loaded.get(family)
    if lm is None:
        lm = load_model(str(tiny_seq2seq.folder(family) if family == "t5"
                            else tiny_decoders.saved(family)), device="cpu")
    share = positional_map(lm, lm.run(TEXT))
    assert share.shape == (lm.cfg.n_layers, lm.cfg.n_heads)
    assert np.all((share >= 0) & (share <= 1)) and share.max() > 0


def test_the_log_of_the_kept_pattern_gives_the_same_share_as_the_scores(minilm, monkeypatch):
    """The measure centres each row, so log(pattern) (the scores less each row's log-sum)
    serves for the scores where no weight underflowed; checked against scale · q·k."""
    import analysis.positional_heads as ph

    trace = minilm.run(TEXT)
    from_pattern = positional_map(minilm, trace)
    monkeypatch.setattr(ph, "_scores", lambda trace, names, layer, attn, allowed, bias:
                        attn.scale * trace.cache[names.attn(layer, "qk")][0].double() + bias)
    assert np.abs(positional_map(minilm, trace) - from_pattern).max() < 1e-6
