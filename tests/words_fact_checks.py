"""Independent checks of "Who gets the drink?"'s facts (teaching/facts_words.py), for
tests/lab_fact_checks.py: the names read off the sentence's words, the model's answer from a
plain run, patching as one patched run per head or cell (not the page's grids), and each head's
direct part of the score worked out by hand from the weights. Also used by
tests/unit/test_words_card.py for the model card's claims."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from teaching.facts_words import GETS, GIVES, option

WORDS_FACTS = ("io", "iopatch", "iostream", "ioattrib")


def direct_parts(model, ids, right: int, wrong: int) -> np.ndarray:
    """[layer, head]: each head's output at the last word, through the final LayerNorm with
    its scale held at this run's, onto unembed[right] - unembed[wrong]."""
    from model.hook_names import hook_names

    m, names = model.model, hook_names(model.cfg)
    trace = model.run_ids(torch.as_tensor(ids))
    resid = trace.cache[names.resid(model.cfg.n_layers - 1, "post")][0, -1].double()  # [d]
    ln = m.ln_final
    std = torch.sqrt(resid.var(unbiased=False) + ln.eps)
    u = (m.unembed.weight[right] - m.unembed.weight[wrong]).detach().double()  # [d_model]
    out = np.zeros((model.cfg.n_layers, model.cfg.n_heads))
    for layer, block in enumerate(m.blocks):
        z = trace.cache[names.attn(layer, "z")][0, :, -1].double()  # [head, d_head]
        for h in range(model.cfg.n_heads):
            part = z[h] @ block.attn.W_O[h].detach().double()  # [d_model]
            out[layer, h] = float((part - part.mean()) / std * ln.weight.detach().double() @ u)
    return out


def _names(text: str) -> tuple[str, str]:
    words = re.findall(r"[A-Za-z]+", text)[1:]
    caps = [w for w in words if w[0].isupper()]
    once = next(w for w in caps if caps.count(w) == 1)
    twice = next(w for w in caps if caps.count(w) == 2)
    return once, twice


def _looked(model, text: str, layer: int, head: int, once: str, twice: str) -> tuple[str, float]:
    trace = model.run(text)
    row = trace.attentions[layer, head, -1].double().numpy()  # [k]
    words = [t.strip() for t in trace.tokens]
    at = {w: row[[i for i, t in enumerate(words) if t == w]].sum() for w in (once, twice)}
    rest = max(row[i] for i, t in enumerate(words) if t not in (once, twice))
    best = max(at, key=at.get)
    if rest > at[best]:
        return "somewhere else", float(rest)
    return option(best, GETS if best == once else GIVES), float(at[best])


def _pair(model, text: str):
    from analysis.patching import prepare_ids

    once, twice = _names(text)
    head, _, tail = text.rpartition(twice)
    corrupted = head + once + tail
    index = model.tokenizer.index
    ids = [torch.tensor(model.tokenizer.rows([t])[0]) for t in (text, corrupted)]
    return prepare_ids(model, *ids, answer=index[" " + once], wrong=index[" " + twice]), \
        corrupted


def _io(fact, model, text, prose) -> None:
    once, twice = _names(text)
    assert (fact["once"], fact["twice"]) == (once, twice)
    index = model.tokenizer.index
    logits = model.run(text).logits[0, -1].double()
    top = model.tokenizer.words[int(logits.argmax())].strip()
    assert fact["first"] == top and fact["prob"] == pytest.approx(
        float(logits.softmax(-1).max()), abs=1e-6)
    assert fact["diff"] == pytest.approx(float(logits[index[" " + once]]
                                               - logits[index[" " + twice]]), abs=1e-4)
    assert fact["said"] == option(top, GETS if top == once else GIVES if top == twice
                                  else "neither")
    _, corrupted = _pair(model, text)
    assert fact["corrupted"] == corrupted
    flipped = model.tokenizer.words[int(model.run(corrupted).logits[0, -1].argmax())]
    if "the answer flips" in prose:
        assert flipped.strip() == twice


def _iopatch(fact, model, text, prose) -> None:
    from analysis.patching import patched_metric

    p, _ = _pair(model, text)
    cfg = model.cfg
    restored = {(lay, h): patched_metric(p, heads=[(lay, h)]) for lay in range(cfg.n_layers)
                for h in range(cfg.n_heads)}
    ranked = sorted(restored, key=restored.get, reverse=True)
    assert ranked[:2] == [(fact["layer"], fact["head"]), (fact["next_layer"], fact["next_head"])]
    assert fact["restored"] == pytest.approx(restored[ranked[0]], abs=1e-4)
    assert fact["next_restored"] == pytest.approx(restored[ranked[1]], abs=1e-4)
    assert fact["alone"].startswith("most") == (restored[ranked[0]] >= 0.5)
    assert fact["heads"] == len(restored)
    once, twice = _names(text)
    looks, share = _looked(model, text, fact["layer"], fact["head"], once, twice)
    assert (fact["looks"], fact["share"]) == (looks, pytest.approx(share, abs=1e-6))
    if "**not** the answer" in prose:
        assert looks == option(twice, GIVES) and share > 0.5


def _iostream(fact, model, text) -> None:
    from analysis.patching import patched_metric

    p, _ = _pair(model, text)
    words = [t.strip() for t in model.run(text).tokens]
    first = [patched_metric(p, resid=[(0, i)]) for i in range(len(words))]
    i = int(np.argmax(first))
    assert fact["first"] == words[i] and fact["first_value"] == pytest.approx(first[i], abs=1e-4)
    assert sorted(first)[-2] < 0.1  # "only" that word
    row = fact["moved"] + 1  # after that layer
    after = [patched_metric(p, resid=[(row, j)]) for j in range(len(words))]
    assert int(np.argmax(after)) == len(words) - 1 and fact["later"] == words[-1]
    assert fact["later_value"] == pytest.approx(after[-1], abs=1e-4)
    assert sorted(after)[-2] < 0.1
    before = [patched_metric(p, resid=[(fact["moved"], len(words) - 1)])]
    assert before[0] < 0.5  # not yet at the last word going into that layer


def _ioattrib(fact, model, text, prose) -> None:
    once, twice = _names(text)
    index = model.tokenizer.index
    ids = model.tokenizer.rows([text])[0]
    parts = direct_parts(model, ids, index[" " + once], index[" " + twice])
    layer, head = np.unravel_index(parts.argmax(), parts.shape)
    assert (fact["layer"], fact["head"]) == (layer, head)
    assert fact["value"] == pytest.approx(parts.max(), abs=1e-4)
    logits = model.run(text).logits[0, -1].double()
    assert fact["total"] == pytest.approx(float(logits[index[" " + once]]
                                                - logits[index[" " + twice]]), abs=1e-4)
    assert fact["early_head"] == int(parts[0].argmax())
    assert fact["early_value"] == pytest.approx(parts[0].max(), abs=1e-4)
    last = parts.shape[0] - 1
    assert fact["where"] == ("a head in the last layer" if layer == last else
                             "a head in the first layer" if layer == 0 else
                             "a head in a middle layer")
    looks, share = _looked(model, text, layer, head, once, twice)
    assert (fact["looks"], fact["share"]) == (looks, pytest.approx(share, abs=1e-6))
    if "copies that name" in prose:
        assert looks == option(once, GETS) and parts.max() > 0


def verify_words(name, fact, trace, model, prose) -> None:
    text = trace.texts[0]
    {"io": lambda: _io(fact, model, text, prose),
     "iopatch": lambda: _iopatch(fact, model, text, prose),
     "iostream": lambda: _iostream(fact, model, text),
     "ioattrib": lambda: _ioattrib(fact, model, text, prose)}[name]()
