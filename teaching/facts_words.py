"""The facts of "Who gets the drink?": a sentence in which one name is said once and the other
twice ("When Mary and John went to the store, John gave a drink to"), the model's answer,
and the heads that patching and attribution find for it. Computed from the model and the
step's text like those of `facts_lab.py`; `facts.py` adds them to FACTS, and
tests/lab_fact_checks.py checks each against an independent computation.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .fact_base import Fact, FactError, FactInputs, plain

GETS, GIVES = "who gets it", "who gives it"  # how the lesson's options name the two names


def _names(tokens: list[str]) -> tuple[str, str]:
    """(the name said once, the name said twice): the capitalised words of the sentence, its
    first word left out (a sentence's first word is capitalised anyway)."""
    counts = Counter(t for t in tokens[1:] if t.strip()[:1].isupper())
    once = [t for t, n in counts.items() if n == 1]
    twice = [t for t, n in counts.items() if n == 2]
    if len(once) != 1 or len(twice) != 1:
        raise FactError("the text needs one name said once and one said twice, like “When "
                        "Mary and John went to the store, John gave a drink to”")
    return once[0], twice[0]


def option(name: str, role: str) -> str:
    """A name as the lesson's options say it: Mary, who gets it."""
    return f"{plain(name).strip()}, {role}"


def _io(f: FactInputs) -> dict:
    """The two names, the model's next word and how sure it is, and the corrupted sentence."""
    from training.english_card import swap_giver

    index = getattr(f.model.tokenizer, "index", None)
    if index is None:
        raise FactError("who gets the drink is asked of a model that reads whole words")
    once, twice = _names(list(f.trace.tokens))
    logits = f.trace.logits[0, -1].double()  # [vocab]
    top = int(logits.argmax())
    first = f.model.tokenizer.tokens([top])[0]
    return {"once": plain(once).strip(), "twice": plain(twice).strip(),
            "first": plain(first).strip(), "prob": float(logits.softmax(-1)[top]),
            "said": option(first, GETS if first == once else GIVES if first == twice
                           else "neither"),
            "diff": float(logits[index[once]] - logits[index[twice]]),
            "once_id": index[once], "twice_id": index[twice],
            "corrupted": swap_giver(f.trace.texts[0], once.strip(), twice.strip())}


def _looks(f: FactInputs, layer: int, head: int, once: str, twice: str) -> tuple[str, float]:
    """Where the head looks most from the last word (the two mentions of a name count
    together), as an option, and its share of the row there."""
    row = f.trace.attentions[layer, head, -1].double().numpy()  # [k]
    tokens = list(f.trace.tokens)
    share = {role: float(sum(row[i] for i, t in enumerate(tokens) if t == name))
             for role, name in ((GETS, once), (GIVES, twice))}
    role = max(share, key=share.get)
    other = max((row[i] for i, t in enumerate(tokens) if t not in (once, twice)), default=0.0)
    if other > share[role]:
        return "somewhere else", float(other)
    return option(once if role == GETS else twice, role), share[role]


def _layer_words(layer: int, n_layers: int) -> str:
    return ("a head in the last layer" if layer == n_layers - 1 else
            "a head in the first layer" if layer == 0 else "a head in a middle layer")


def _io_patch(f: FactInputs) -> dict:
    """The patching page's head grid for the sentence and its corrupted twin (the giver made
    the other name), on the logit difference once-name minus twice-name: the head that brings
    back most, the next one, and where the first looks."""
    from analysis.patching import head_patching, prepare

    io = _io(f)
    p = prepare(f.model, f.trace.texts[0], io["corrupted"], io["once_id"], io["twice_id"])
    grid = head_patching(p)  # [layer, head]
    order = np.argsort(-grid.ravel())
    (l1, h1), (l2, h2) = (divmod(int(i), grid.shape[1]) for i in order[:2])
    looks, share = _looks(f, l1, h1, " " + io["once"], " " + io["twice"])
    return {"layer": l1, "head": h1, "restored": float(grid[l1, h1]), "next_layer": l2,
            "next_head": h2, "next_restored": float(grid[l2, h2]), "heads": int(grid.size),
            "alone": "most of it, from one head" if grid[l1, h1] >= 0.5 else
            "a little from each of several heads", "looks": looks, "share": share,
            "where": _layer_words(l1, grid.shape[0])}


def _io_attrib(f: FactInputs) -> dict:
    """Direct attribution of the logit difference once-name minus twice-name: the head that
    writes most of it, and where that head looks from the last word."""
    from analysis.attribution import attribute

    io = _io(f)
    a = attribute(f.model, f.trace.texts[0], target=io["once_id"], baseline=io["twice_id"])
    layer, head = divmod(int(np.argmax(a.heads)), a.heads.shape[1])
    looks, share = _looks(f, layer, head, " " + io["once"], " " + io["twice"])
    early = int(np.argmax(a.heads[0]))  # the first layer's biggest writer
    return {"layer": layer, "head": head, "value": float(a.heads[layer, head]),
            "share_of": float(a.heads[layer, head] / a.value), "total": a.value,
            "where": _layer_words(layer, a.heads.shape[0]), "looks": looks, "share": share,
            "early_head": early, "early_value": float(a.heads[0, early])}


def _io_stream(f: FactInputs) -> dict:
    """The patching page's residual grid for the same pair: the word that brings the answer
    back going into the first layer, the word that does after it, and the layer it moved in."""
    from analysis.patching import prepare, residual_patching

    io = _io(f)
    p = prepare(f.model, f.trace.texts[0], io["corrupted"], io["once_id"], io["twice_id"])
    grid = residual_patching(p)  # [layer + 1, pos]: into each layer, then out of the last
    best = grid.argmax(-1)  # [row]
    last = grid.shape[1] - 1
    moved = next((r for r in range(len(best)) if best[r] == last), None)
    if moved is None or moved == 0:
        raise FactError("the answer does not move to the last word in this sentence")
    word = lambda i: plain(f.trace.tokens[int(i)]).strip()  # noqa: E731
    return {"first": word(best[0]), "first_value": float(grid[0, best[0]]),
            "later": word(last), "later_value": float(grid[moved, last]),
            "moved": moved - 1}


WORDS_FACTS: dict[str, Fact] = {
    "io": Fact(("once", "twice", "first", "prob", "said", "diff", "once_id", "twice_id",
                "corrupted"), _io,
               describe="who gets the drink: the two names, the model's answer, the flip"),
    "iopatch": Fact(("layer", "head", "restored", "next_layer", "next_head", "next_restored", "heads",
                     "alone", "looks", "share", "where"), _io_patch,
                    describe="the heads patching finds for who gets the drink"),
    "iostream": Fact(("first", "first_value", "later", "later_value", "moved"), _io_stream,
                     describe="where the answer is along the stream, before and after it moves"),
    "ioattrib": Fact(("layer", "head", "value", "share_of", "total", "where", "looks",
                      "share", "early_head", "early_value"), _io_attrib,
                     describe="the head that writes most of who gets the drink"),
}
