"""The facts of "Why does the head that looks back look back?": the head that looks most at
the token before, one of its scores taken apart (analysis/score_parts.py), how much of its
pattern place alone explains (analysis/positional_heads.py), and the same head on the words
in reverse order. Every number is computed from the run of the step's text."""

from __future__ import annotations

import numpy as np

from analysis.positional_heads import positional_map
from analysis.score_parts import decompose_cell, kind_shares, needed, score_kinds

from .fact_base import Fact, FactError, FactInputs, plain

PLACE, WORDS = "where the two tokens stand", "which two words they are"  # the question's options
STILL, NOT = "yes, one token back again", "no, it follows the words"


def back_shares(attentions, special) -> np.ndarray:
    """[layer, head]: the mean weight a token puts on the token just before it, over the
    tokens that are not special and follow one that is not."""
    rows = [i for i in range(1, len(special)) if not special[i] and not special[i - 1]]
    if not rows:
        raise FactError("the text needs two words in a row to find a head that looks back")
    a = attentions.double().numpy()  # [layer, head, q_pos, k_pos]
    return np.mean([a[:, :, i, i - 1] for i in rows], axis=0)


def reversed_words(text: str) -> str:
    """The text's words in reverse order, the end's punctuation kept at the end."""
    body = text.strip()
    end = body[-1] if body and body[-1] in ".!?" else ""
    words = body[: len(body) - len(end)].split()
    return " ".join(reversed(words)) + end


def _why(f: FactInputs) -> dict:
    lm = f.model
    trace = lm.run(f.trace.texts[0], keep=needed(lm.cfg))
    special = trace.special_mask[0].bool().tolist()
    back = back_shares(trace.attentions, special)
    layer, head = divmod(int(back.argmax()), back.shape[1])
    rows = [i for i in range(1, trace.n_tokens) if not special[i] and not special[i - 1]]
    pattern = trace.attentions[layer, head].double().numpy()  # [q_pos, k_pos]
    query = max(rows, key=lambda i: pattern[i, i - 1])
    cell = decompose_cell(lm, trace, layer, head, query, query - 1)
    shares = kind_shares(score_kinds(cell))
    place_map = positional_map(lm, trace)
    turned = reversed_words(f.trace.texts[0])
    again = lm.run(turned)
    back_again = float(back_shares(again.attentions, again.special_mask[0].bool().tolist())[
        layer, head])
    place, words = shares.get("place", 0.0), shares.get("words", 0.0)
    return {"layer": layer, "head": head, "back": float(back[layer, head]),
            "query": plain(trace.tokens[query]), "key": plain(trace.tokens[query - 1]),
            "query_pos": query, "key_pos": query - 1, "weight": float(pattern[query, query - 1]),
            "score": cell.score, "place": place, "words": words,
            "mixed": shares.get("word and place", 0.0),
            "answer": PLACE if place >= words else WORDS,
            "positional": float(place_map[layer, head]),
            "rank": int((place_map > place_map[layer, head]).sum()) + 1,
            "reversed": turned, "back_again": back_again,
            "again": STILL if back_again >= 0.5 else NOT}


SCORE_FACTS: dict[str, Fact] = {
    "why": Fact(("layer", "head", "back", "query", "key", "query_pos", "key_pos", "weight",
                 "score", "place", "words", "mixed", "answer", "positional", "rank", "reversed",
                 "back_again", "again"), _why,
                describe="the head that looks back, one of its scores taken apart, and the "
                         "same head on the words in reverse order"),
}
