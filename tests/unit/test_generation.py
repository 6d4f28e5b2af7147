"""Step-by-step generation: greedy is the argmax of a full run, seeds reproduce, top-k = 1 and
a temperature near 0 are greedy, the cut-away mass is what top-k and top-p removed, and a
generation says why it stopped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.generation import (
    MAX_NEW_TOKENS, Sampling, choose, generate, generate_ids,
)
from model import load_model
from model.hooks import hooks_active

PROMPT = "The cat sat on the"


def _decoder(name, tiny_models_loaded, tiny_chars):
    return tiny_chars if name == "tiny-chars" else tiny_models_loaded[name]


@pytest.mark.parametrize("name", ["gpt2", "llama", "tiny-chars"])
def test_greedy_is_the_argmax_of_a_full_run_at_every_step(name, tiny_models_loaded, tiny_chars):
    lm = _decoder(name, tiny_models_loaded, tiny_chars)
    before = {k: v.clone() for k, v in lm.model.state_dict().items()}
    g = generate(lm, PROMPT, 12)
    assert len(g.steps) == 12 and len(g.ids) == g.n_prompt + 12
    assert g.prompt_ids == lm.encode(PROMPT).input_ids[0].tolist()
    full = lm.run_ids(g.ids)  # one separate run on the whole text
    probs = full.logits[0].double().softmax(-1)  # [pos, vocab]
    for step in g.steps:
        p = step.position
        assert step.window_start == 0
        assert step.chosen == g.ids[p + 1] == int(full.logits[0, p].argmax())
        assert step.top_ids[0] == step.chosen and step.cut_mass == 0.0
        # the step's own forward pass saw a shorter text: float32 rounding only (~1e-7)
        assert step.chosen_prob == pytest.approx(float(probs[p, step.chosen]), abs=1e-5)
        # the recorded row is the newest token's row of every layer's and head's pattern
        rows = full.attentions[:, :, p, : p + 1]  # [layer, head, k_pos]
        torch.testing.assert_close(step.attention, rows, atol=1e-5, rtol=0)
        assert step.attention[:, :, : p + 1].sum(-1).sub(1).abs().max() < 1e-5
    assert g.new_text == lm.tokenizer.decode(g.new_ids)
    assert not hooks_active()
    for key, value in lm.model.state_dict().items():  # the shared model is untouched
        assert torch.equal(value, before[key]), key


def test_the_same_seed_gives_the_same_text(tiny_models_loaded):
    lm = tiny_models_loaded["gpt2"]
    sampling = Sampling(greedy=False, temperature=1.5, top_k=50, top_p=0.95, seed=7)
    a, b = generate(lm, PROMPT, 15, sampling), generate(lm, PROMPT, 15, sampling)
    assert a.ids == b.ids and a.new_text == b.new_text
    assert [s.top_probs for s in a.steps] == [s.top_probs for s in b.steps]
    others = {tuple(generate(lm, PROMPT, 15, Sampling(greedy=False, temperature=1.5,
                                                      seed=s)).new_ids) for s in range(4)}
    assert len(others) > 1  # different seeds do draw different texts


@pytest.mark.parametrize("name", ["gpt2", "tiny-chars"])
def test_top_k_one_is_greedy(name, tiny_models_loaded, tiny_chars):
    lm = _decoder(name, tiny_models_loaded, tiny_chars)
    greedy = generate(lm, PROMPT, 10)
    for seed in range(3):
        g = generate(lm, PROMPT, 10, Sampling(greedy=False, temperature=1.7, top_k=1, seed=seed))
        assert g.ids == greedy.ids
        for step in g.steps:
            assert step.n_kept == 1 and step.top_kept == [True] + [False] * 9
            assert step.cut_top_k == pytest.approx(1 - step.top_probs[0], abs=1e-12)


def test_temperature_towards_zero_approaches_greedy(tiny_models_loaded):
    lm = tiny_models_loaded["gpt2"]
    greedy = generate(lm, PROMPT, 10)
    tops = [generate(lm, PROMPT, 1, Sampling(greedy=False, temperature=t)).steps[0].top_probs[0]
            for t in (3.0, 1.0, 0.3, 0.1, 0.01)]
    assert all(a < b for a, b in zip(tops, tops[1:])), tops  # sharper as T falls
    assert tops[-1] > 0.999 and tops[0] < 0.5
    for seed in range(3):  # at T = 0.001 every draw is the argmax
        g = generate(lm, PROMPT, 10, Sampling(greedy=False, temperature=1e-3, seed=seed))
        assert g.ids == greedy.ids
    hot = [generate(lm, PROMPT, 10, Sampling(greedy=False, temperature=2.0, seed=s)).ids
           for s in range(3)]
    assert any(ids != greedy.ids for ids in hot)  # at a high temperature it does not


def _nucleus_by_hand(probs: np.ndarray, k: int, p: float) -> set[int]:
    """The tokens top-k then top-p keep, written out with numpy."""
    order = np.argsort(-probs, kind="stable")[:k]
    kept_probs = probs[order] / probs[order].sum()
    total, keep = 0.0, []
    for idx, q in zip(order, kept_probs):
        keep.append(int(idx))
        total += q
        if total >= p:
            break
    return set(keep)


@pytest.mark.parametrize("k,p", [(5, 0.8), (50, 0.5), (400, 0.9), (3, 1.0)])
def test_cut_away_mass_is_one_minus_the_kept_mass(k, p):
    logits = torch.randn(400, generator=torch.Generator().manual_seed(k)) * 3  # [vocab]
    choice = choose(logits, Sampling(greedy=False, temperature=0.8, top_k=k, top_p=p),
                    torch.Generator().manual_seed(0))
    probs = (logits.double() / 0.8).softmax(-1).numpy()  # [vocab]
    kept = _nucleus_by_hand(probs, k, p)
    assert set(torch.nonzero(choice.kept).flatten().tolist()) == kept
    assert choice.chosen in kept
    assert choice.kept_mass == pytest.approx(probs[sorted(kept)].sum(), abs=1e-12)
    assert choice.cut_mass == pytest.approx(1 - choice.kept_mass, abs=1e-12)
    top_k_set = set(np.argsort(-probs, kind="stable")[:k].tolist())
    assert choice.cut_top_k == pytest.approx(1 - probs[sorted(top_k_set)].sum(), abs=1e-12)


def test_steps_record_the_cut_mass(tiny_models_loaded):
    lm = tiny_models_loaded["llama"]
    g = generate(lm, PROMPT, 8, Sampling(greedy=False, top_k=20, top_p=0.7, seed=1))
    for step in g.steps:
        assert step.cut_mass == pytest.approx(1 - step.kept_mass, abs=1e-9)
        assert step.cut_top_k > 0 and step.n_kept <= 20
        assert sum(q for q, keep in zip(step.top_probs, step.top_kept) if keep) \
            <= step.kept_mass + 1e-12
        assert step.chosen in step.top_ids[: step.n_kept] or step.n_kept > 10


def test_the_window_slides_past_the_context(tiny_chars):
    n_ctx = tiny_chars.cfg.n_ctx
    prompt = ("the query looks at the key " * 3)[: n_ctx - 4]
    g = generate(tiny_chars, prompt, 10)
    assert g.notes and len(g.ids) == len(prompt) + 10
    late = g.steps[-1]
    assert late.window_start == late.position + 1 - n_ctx > 0
    assert late.attention.shape == (2, 4, n_ctx)
    window = tiny_chars.run_ids(g.ids[late.window_start: late.position + 1])
    assert late.chosen == int(window.logits[0, -1].argmax())


def test_bad_requests_get_a_clear_message(tiny_models_loaded, tiny_chars):
    with pytest.raises(ValueError, match="encoder"):
        generate(tiny_models_loaded["bert"], PROMPT, 5)
    with pytest.raises(ValueError, match="encoder–decoder"):
        generate(load_model("tiny-reverse"), "abc", 5)
    with pytest.raises(ValueError, match=f"between 1 and {MAX_NEW_TOKENS}"):
        generate(tiny_chars, PROMPT, MAX_NEW_TOKENS + 1)
    with pytest.raises(ValueError, match="the prompt is 80 tokens long"):
        generate(tiny_chars, "a" * 80, 5)
    with pytest.raises(ValueError, match="temperature"):
        Sampling(greedy=False, temperature=0)
    with pytest.raises(ValueError, match="top-p"):
        Sampling(greedy=False, top_p=1.5)
    with pytest.raises(ValueError, match="top-k"):
        Sampling(greedy=False, top_k=0)
    with pytest.raises(ValueError, match="empty"):
        generate_ids(tiny_chars, [], 5)


@pytest.mark.parametrize("name", ["gpt2", "tiny-chars"])
def test_a_long_prompt_keeps_its_last_tokens(name, tiny_models_loaded, tiny_chars):
    """Past the context, generation continues from the END of the prompt: the last tokens are
    kept, the first ones left out, and a short prompt is kept whole."""
    from analysis.generation import prompt_window
    lm = _decoder(name, tiny_models_loaded, tiny_chars)
    n_ctx = lm.cfg.n_ctx
    text = "".join(f"{i} apples, " for i in range(400)) + "the end"
    full = lm.tokenizer.encode([text], None, 10**6)
    everything = full.input_ids[0, :int(full.attention_mask[0].sum())].tolist()
    assert len(everything) > n_ctx  # the test needs a prompt past the context
    ids, left_out = prompt_window(lm, text, limit=n_ctx)
    assert ids == everything[-n_ctx:] and left_out == len(everything) - n_ctx
    assert lm.tokenizer.decode(ids).endswith("the end")
    short, none_left = prompt_window(lm, PROMPT)
    assert short == lm.encode(PROMPT).input_ids[0].tolist() and none_left == 0


def test_a_generation_says_why_it_stopped(tiny_chars):
    prompt = tiny_chars.encode("The cat sat").input_ids[0].tolist()
    full = generate_ids(tiny_chars, prompt, 7)
    assert not full.stopped_at_end and len(full.new_ids) == 7
    assert full.why_stopped.startswith("Stopped after 7 new tokens, the number asked for")
    first = full.new_ids[2]  # stop on the third token written: an end token here
    early = generate_ids(tiny_chars, prompt, 7, stop_ids=[first])
    n = full.new_ids.index(first) + 1
    assert early.stopped_at_end and len(early.new_ids) == n < 7
    assert early.why_stopped == (f"Stopped after {n} new token{'s' * (n != 1)}: the model wrote "
                                 "an end token.")
