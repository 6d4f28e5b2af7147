"""A fact the concept check needs that no lesson fact gives: which part of the first layer is
the first to carry a change of one word to another word's vector (only attention moves
information between tokens). Computed from two runs of the step's model, like the facts of
`facts.py`, which adds it to FACTS; tests/lab_fact_checks.py checks it independently."""

from __future__ import annotations

import torch

from model.hook_names import hook_names

from .fact_base import Fact, FactError, FactInputs, plain

# Where a word's vector first changes when another word is swapped (the question's options).
MIX_PLACES = ("already before the first layer", "at the first layer's attention",
              "at the first layer's feed-forward network", "not in the first layer")
MIX_TOLERANCE = 1e-5  # a difference below this is float noise (float32 runs)


def swap_first_word(trace) -> tuple[int, int, int, torch.Tensor]:
    """(first word's position, the watched word's position, the id put in, the swapped ids):
    the text's first word (a token with a letter, not a marker) becomes the next other word
    of the same text, and the last word is watched."""
    special = trace.special_mask[0].bool().tolist()
    words = [i for i, s in enumerate(special)
             if not s and any(c.isalpha() for c in plain(trace.tokens[i]))]
    ids = trace.input_ids[0]
    others = [int(ids[i]) for i in words[1:-1] if int(ids[i]) != int(ids[words[0]])]
    if len(words) < 3 or not others:
        raise FactError("the text needs three words, two of them different, to swap one "
                        "and watch another")
    swapped = ids.clone()
    swapped[words[0]] = others[0]
    return words[0], words[-1], others[0], swapped


def _mix(f: FactInputs) -> dict:
    lm, trace = f.model, f.trace
    first, watched, put, swapped = swap_first_word(trace)
    names = hook_names(lm.cfg)
    parts = [names.resid(0, "pre"), names.out(0, "attn"), names.out(0, "mlp", required=False)]
    wanted = {p for p in parts if p}
    runs = [lm.run_ids(ids, keep=lambda name: name in wanted)
            for ids in (trace.input_ids[0], swapped)]
    changes = []
    for part in parts:
        if part is None:
            changes.append(0.0)
            continue
        a, b = (run.cache[part][0, watched].double() for run in runs)  # [d_model]
        changes.append(float((a - b).abs().max()))
    place = next((i for i, c in enumerate(changes) if c > MIX_TOLERANCE), len(MIX_PLACES) - 1)
    return {"word": plain(trace.tokens[watched]), "swapped": plain(trace.tokens[first]),
            "by": plain(lm.tokenizer.decode([put])), "where": MIX_PLACES[place],
            "embed_change": changes[0], "attn_change": changes[1]}


CHECK_FACTS: dict[str, Fact] = {
    "mix": Fact(("word", "swapped", "by", "where", "embed_change", "attn_change"), _mix,
                describe="where a word's vector first changes when the first word is swapped"),
}
