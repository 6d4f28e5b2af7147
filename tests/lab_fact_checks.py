"""Independent checks of the course's facts (teaching/facts_lab.py), for
tests/unit/test_lesson_claims.py: each recomputes a fact from the weights, a plain run or a
second code path, never from the function that made it. `verify_lab(name, fact, trace,
settings, model, prose)` returns False for a fact it does not know."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from score_fact_checks import verify_why
from words_fact_checks import WORDS_FACTS, verify_words
from teaching.facts import plain


def _word(model, token_id: int) -> str:
    return plain(model.tokenizer.decode([int(token_id)])) or "a space"


def _special(model, ids) -> np.ndarray:
    special = set(model.tokenizer.special_ids)
    return np.array([int(i) in special for i in ids])


def _dims(fact, trace, model) -> None:
    d_model = trace.hidden_states.shape[-1]
    heads = trace.attentions.shape[1]
    d_mlp = model.model.blocks[0].mlp.W_in.weight.shape[0]
    assert (fact["d_model"], fact["heads"], fact["d_mlp"]) == (d_model, heads, d_mlp)
    assert fact["d_head"] * heads == d_model and fact["scale"] == pytest.approx(
        math.sqrt(d_model / heads))
    assert fact["widen"] * d_model == pytest.approx(d_mlp)
    assert fact["tokens"] == len(trace.tokens) and fact["scores"] == len(trace.tokens) ** 2


def first_layer_input(model, ids, type_ids) -> torch.Tensor:
    """[pos, d_model] from the weights: token (+ type) + position, then the embedding norm."""
    embed = model.model.embed
    ids = torch.as_tensor(ids)
    x = embed.W_E.weight[ids].double()
    if hasattr(embed, "pe"):  # fixed waves, the token part scaled as the model says
        return x * embed.scale + embed.pe[: len(ids)].double()
    if embed.W_type is not None:
        x = x + embed.W_type.weight[torch.as_tensor(type_ids)].double()
    x = x + embed.W_pos.weight[: len(ids)].double()
    ln = embed.ln
    return torch.nn.functional.layer_norm(x, x.shape[-1:], ln.weight.double(), ln.bias.double(),
                                          ln.eps) if ln is not None else x


def _embed(fact, trace, model, prose) -> None:
    h = first_layer_input(model, trace.input_ids[0], trace.token_type_ids[0])
    assert torch.allclose(h, trace.hidden_states[0].double(), atol=1e-4)  # the model's own
    words = [plain(t).lower() for t in trace.tokens]
    i = words.index(fact["word"].lower())
    j = words.index(fact["word"].lower(), i + 1)
    cos = float(h[i] @ h[j] / (h[i].norm() * h[j].norm()))
    assert fact["cos"] == pytest.approx(cos, abs=1e-5)
    assert fact["same"].startswith("no") == (cos < 1 - 1e-6)
    if "differ" in prose:
        assert cos < 0.999
    embed = model.model.embed
    parts = ["token"] + (["token type"] if getattr(embed, "W_type", None) is not None else []) \
        + ["position"]
    assert fact["parts"] == " + ".join(parts) and fact["count"] == len(parts)
    assert fact["norm"].startswith("then") == (getattr(embed, "ln", None) is not None)


def _resid(fact, trace, prose) -> None:
    h = trace.hidden_states.double().numpy()
    cos = [np.mean([h[layer, p] @ h[layer + 1, p] / np.linalg.norm(h[layer, p])
                    / np.linalg.norm(h[layer + 1, p]) for p in range(h.shape[1])])
           for layer in range(h.shape[0] - 1)]
    assert fact["cos"] == pytest.approx(np.mean(cos), abs=1e-6)
    assert fact["low"] == pytest.approx(min(cos), abs=1e-6)
    assert fact["low_layer"] == int(np.argmin(cos))
    assert fact["kept"] == ("mostly kept" if np.mean(cos) > 0.5 else "mostly replaced")
    if "Mostly kept" in prose:
        assert np.mean(cos) > 0.5


def _lens(fact, trace, model) -> None:
    m = model.model
    final = trace.logits[0, -1] if trace.logits.dim() == 3 else trace.logits[-1]  # [vocab]
    assert fact["final"] == _word(model, final.argmax())  # the lens's last row: the model
    assert fact["prob"] == pytest.approx(float(final.softmax(-1).max()), abs=1e-5)
    w_u = m.unembed.weight.double()
    ln = m.ln_final
    tops = []
    for row in trace.hidden_states[:, -1].double():  # [d_model] after each layer
        x = torch.nn.functional.layer_norm(row, row.shape, ln.weight.double(), ln.bias.double(),
                                           ln.eps)
        tops.append(int((w_u @ x).argmax()))
    assert fact["first"] == _word(model, tops[0])
    assert fact["changed"].startswith("yes") == (len(set(tops)) > 1)
    settle = min(r for r in range(len(tops)) if set(tops[r:]) == {tops[-1]})
    assert fact["settles"] == ("embeddings" if settle == 0 else f"after layer {settle - 1}")


def _gen(fact, trace, model) -> None:
    ids = [int(i) for i in trace.input_ids[0]]
    probs = []
    for _ in range(fact["n"]):
        logits = model.run_ids(torch.tensor(ids)).logits[0, -1].double()
        probs.append(logits.softmax(-1))
        ids.append(int(logits.argmax()))
    new = ids[len(trace.input_ids[0]):]
    assert fact["written"] == model.tokenizer.decode(new)
    assert fact["first"] == _word(model, new[0])
    assert fact["prob"] == pytest.approx(float(probs[0].max()), abs=1e-5)
    assert fact["runner_up"] == pytest.approx(float(probs[0].sort(descending=True).values[1]),
                                              abs=1e-5)
    assert fact["second_prob"] == pytest.approx(float(probs[1].max()), abs=1e-5)
    assert fact["sure"] == ("more than half" if probs[0].max() > 0.5 else "half or less")


def _attrib(fact, trace, model) -> None:
    logits = trace.logits[0, -1] if trace.logits.dim() == 3 else trace.logits[-1]
    target = int(logits.argmax())
    assert fact["target"] == _word(model, target)
    assert fact["logit"] == pytest.approx(float(logits[target]), abs=1e-4)
    assert fact["total"] == pytest.approx(fact["logit"], abs=1e-3)  # the parts add up
    assert fact["top_share"] == pytest.approx(fact["top_value"] / fact["logit"])
    named = f"layer {fact['layer']} head {fact['head']}"
    last = trace.cfg.n_layers - 1
    if fact["top"] == named and fact["layer"] == last:
        assert fact["kind"] == "a head in the last layer" and fact["head_value"] == fact[
            "top_value"]


def _ablated_metric(model, trace, head) -> float:
    from analysis.ablation import (
        Inputs, ablation_report, model_directory, sentence_pooling,
    )

    inputs = Inputs.encode(model, trace.texts[0])
    if trace.cfg.causal:
        before, after = ablation_report(model, inputs, [head], "zero", None)["loss"]
        return after - before
    pooling = sentence_pooling(model_directory(trace.model_name)) or "mean"
    return 1 - ablation_report(model, inputs, [head], "zero", pooling)["sentence"]


def _ablate(fact, trace, model) -> None:
    a = trace.attentions.double().numpy()
    sharp = a.max(-1).mean(-1)
    layer, head = np.unravel_index(sharp.argmax(), sharp.shape)
    assert (fact["sharp_layer"], fact["sharp_head"]) == (layer, head)
    assert fact["sharp_share"] == pytest.approx(sharp.max(), abs=1e-6)
    # one head removed at a time through the page's report, not the sweep that made the fact
    assert fact["sharp_effect"] == pytest.approx(_ablated_metric(model, trace, (layer, head)),
                                                 abs=1e-4)
    top = (fact["top_layer"], fact["top_head"])
    assert fact["top_effect"] == pytest.approx(_ablated_metric(model, trace, top), abs=1e-4)
    assert fact["top_effect"] >= fact["sharp_effect"] and fact["heads"] == a.shape[0] * a.shape[1]
    assert fact["same"].startswith("yes") == ((layer, head) == top) == (fact["rank"] == 1)


def _patch(fact, model, prose) -> None:
    from analysis.patching import induction_pair, patched_metric, prepare_ids
    from teaching.facts_lab import PRESET_LENGTH, PRESET_SEQS
    from teaching.pages import BY_PATH

    spec = BY_PATH["patching"].by_name
    assert (spec["len"].default, spec["seqs"].default) == (PRESET_LENGTH, PRESET_SEQS)
    head = (fact["layer"], fact["head"])
    restored = []
    for seed in range(PRESET_SEQS):  # one patched run per sequence, not the page's grid
        p = prepare_ids(model, *induction_pair(PRESET_LENGTH, 36, seed, "first"))
        restored.append(patched_metric(p, heads=[head]))  # normalised: 0 corrupted, 1 clean
    assert fact["restored"] == pytest.approx(np.mean(restored), abs=1e-4)
    if "previous-token head" in prose or "previous token" in prose:  # the lesson's story
        text = "k3bq9xw7mf2tk3bq9xw7mf2t"
        prev = model.run(text).attentions[0].diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)
        assert head == (0, int(prev.argmax()))


def _shift(fact, trace) -> None:
    text = trace.texts[0]  # a character model: one token per character
    assert (fact["inputs"], fact["targets"]) == (text[:-1], text[1:])
    assert (fact["first"], fact["second"], fact["pairs"]) == (text[0], text[1], len(text) - 1)


def _effect(fact, trace, settings, model) -> None:
    """Occlusion by hand: the text run again without each token."""
    ids = trace.input_ids[0]
    special = _special(model, ids)
    row = trace.attentions[settings["layer"], settings["head"]].double().numpy()  # [q, k]
    run = lambda x: model.run_ids(torch.as_tensor(x))  # noqa: E731
    if trace.cfg.causal:
        target = int(trace.logits[0, -1].argmax())
        value = lambda t: float(t.logits[0, -1].log_softmax(-1)[target])  # noqa: E731
        looked = row[-1]
    else:
        value = lambda t: float(t.hidden_states[-1].double().mean(0).norm())  # noqa: E731
        looked = row.mean(0)
    base = value(run(ids))
    effect = np.array([abs(base - value(run(torch.cat([ids[:j], ids[j + 1:]]))))
                       if not special[j] else -1.0 for j in range(len(ids))])
    looked = np.where(special, -1.0, looked)
    i, j = int(looked.argmax()), int(effect.argmax())
    assert fact["looked"] == (plain(trace.tokens[i]) or "a space")
    assert fact["share"] == pytest.approx(looked[i], abs=1e-6)
    assert fact["mattered"] == (plain(trace.tokens[j]) or "a space")
    assert fact["same"].startswith("yes") == (i == j)


def _mix(fact, trace, model) -> None:
    """The first layer by hand: the embedding sum from the weights, and the first block's
    attention output from a plain run of each text, at the watched word."""
    from teaching.facts_check import MIX_PLACES, MIX_TOLERANCE

    ids = trace.input_ids[0]
    special = _special(model, ids)
    words = [i for i, t in enumerate(trace.tokens)
             if not special[i] and any(c.isalpha() for c in plain(t))]
    first, watched = words[0], words[-1]
    assert (fact["swapped"], fact["word"]) == (plain(trace.tokens[first]),
                                               plain(trace.tokens[watched]))
    put = next(int(ids[i]) for i in words[1:-1] if int(ids[i]) != int(ids[first]))
    assert fact["by"] == _word(model, put)
    swapped = ids.clone()
    swapped[first] = put
    types = trace.token_type_ids[0]
    a, b = (first_layer_input(model, x, types) for x in (ids, swapped))
    assert fact["embed_change"] == pytest.approx(float((a[watched] - b[watched]).abs().max()),
                                                 abs=1e-5)
    assert float((a[first] - b[first]).abs().max()) > 0  # the swapped word itself did change
    out = [model.run_ids(x, keep=lambda n: n == "blocks.0.hook_attn_out").cache[
        "blocks.0.hook_attn_out"][0, watched].double() for x in (ids, swapped)]
    change = float((out[0] - out[1]).abs().max())
    assert fact["attn_change"] == pytest.approx(change, rel=1e-3, abs=1e-6)
    if fact["embed_change"] <= MIX_TOLERANCE and change > MIX_TOLERANCE:
        assert fact["where"] == MIX_PLACES[1]  # only attention carries the swap across


def verify_lab(name, fact, trace, settings, model, prose) -> bool:
    checks = {
        "dims": lambda: _dims(fact, trace, model),
        "embed": lambda: _embed(fact, trace, model, prose),
        "resid": lambda: _resid(fact, trace, prose),
        "lens": lambda: _lens(fact, trace, model),
        "gen": lambda: _gen(fact, trace, model),
        "attrib": lambda: _attrib(fact, trace, model),
        "ablate": lambda: _ablate(fact, trace, model),
        "patch": lambda: _patch(fact, model, prose),
        "shift": lambda: _shift(fact, trace),
        "effect": lambda: _effect(fact, trace, settings, model),
        "why": lambda: verify_why(fact, trace, model),
        "mix": lambda: _mix(fact, trace, model),
    }
    checks |= {n: (lambda n=n: verify_words(n, fact, trace, model, prose)) for n in WORDS_FACTS}
    if name not in checks:
        return False
    checks[name]()
    return True
