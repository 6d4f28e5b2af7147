"""tiny-words' card, in the sidebar under the model box: what it was trained on, how it does
on sentences it never saw, and which of its heads answer "who gets the drink?". Every number
is read from what the run stored (weights/tiny-words/config.json's measured behaviours, and
card.json, written by training/english_card.py from patching and attribution on the model);
tests/unit/test_words_card.py checks the card's claims against a fresh run."""

from __future__ import annotations

import functools
import json

import streamlit as st

from model.registry import BUNDLED
from training import english_world as world

MODEL = "tiny-words"
GOAL = 0.95  # the share of held-out sentences the project aimed for (issue 36)


@functools.cache
def _stored() -> tuple[dict, dict]:
    """(config.json's "training", card.json) of the shipped model."""
    folder = BUNDLED[MODEL]()
    training = json.loads((folder / "config.json").read_text(encoding="utf-8"))["training"]
    return training, json.loads((folder / "card.json").read_text(encoding="utf-8"))


def _head(lh) -> str:
    return f"layer {lh[0]}, head {lh[1]}"


def head_lines(card: dict) -> list[str]:
    """Which heads do what, in plain words, from the card's roles and numbers."""
    lines = []
    for lh in card["name_movers"]:
        layer, h = lh
        right, repeated = (card[k][layer][h] for k in ("attention_to_right",
                                                        "attention_to_repeated"))
        looks = (f"looks {right:.0%} at the name said once and copies it" if right > repeated
                 else f"looks {repeated:.0%} at the name said twice and pushes it down")
        lines.append(f"**{_head(lh).capitalize()}** {looks}: it adds "
                     f"{card['attribution'][layer][h]:.1f} to the right name's score over "
                     "the other's.")
    carried = "; ".join(f"{_head(lh)}: {card['patching'][lh[0]][lh[1]]:.0%}"
                        for lh in card["carriers"])
    lines.append(f"**Patching** (put back alone from the sentence into one where the giver is "
                 f"swapped), these bring back most of the answer: {carried}.")
    return lines


def card_lines() -> list[str]:
    """The whole card, one Markdown paragraph a line."""
    training, card = _stored()
    held_out = training["metrics"]["indirect object accuracy"]
    below = (f", below the {GOAL:.0%} the project aimed for" if held_out < GOAL else "")
    return [
        f"**Trained on** {training['settings']['steps']:,} batches of sentences our own code "
        f"writes about {len(world.NAMES)} names, {len(world.OBJECTS)} things and "
        f"{len(world.PLACES)} places: who gives what to whom (“When Mary and John went to the "
        "store, John gave a drink to Mary.”), verbs that agree with their noun, word lists "
        "said twice, and short stories.",
        f"**Who gets the drink?** On {card['n']} new sentences of the kinds it trained on, the "
        f"right name comes first {card['right_first']:.0%} of the time. With names and "
        f"wordings it never saw in those roles, {held_out:.0%} (measured at the end of its "
        f"training){below}.",
        *head_lines(card),
    ]


def draw(name: str) -> None:
    """The card in a closed expander, when `name` is tiny-words."""
    if name != MODEL:
        return
    with st.expander("What tiny-words learned"):
        for line in card_lines():
            st.caption(line)
