"""The word-level decoder's training text, written by this code from the small world in
english_world.py: four families of sentences, mixed.

- indirect object: "When Mary and John went to the store, John gave a drink to Mary." The
  name said twice gives; the other one receives.
- agreement: "The keys to the old cabinet are small." The verb agrees with the first noun,
  across the words between (whose noun may have the other number).
- induction: a list of random words, then the same list again: only "find where this word
  came before and copy what followed" predicts the second half.
- stories: plain short stories ("One day, Anna went to the park. She saw a small dog.") so
  that the text reads as English.

The held-out split uses other templates and the held-out names, objects and nouns of
english_world.py. Everything is drawn from a `random.Random(seed)`: the same seed gives the
same text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from model.tokenizer import split_words

from . import english_world as world

# Indirect object: {a} and {b} are introduced, {s} (one of them) gives to the other.
IO_TEMPLATES = (
    "When {a} and {b} went to the {place}, {s} gave a {obj} to",
    "Then, {a} and {b} had a long day at the {place}. {s} gave the {obj} to",
    "After {a} and {b} went to the {place}, {s} handed a {obj} to",
    "While {a} and {b} were working at the {place}, {s} passed the {obj} to",
    "{a} and {b} went to the {place}. {s} threw a {obj} to",
    "The {place} was quiet, so {a} and {b} stayed there. {s} brought a {obj} to",
)
HELD_OUT_IO_TEMPLATES = (
    "When {a} and {b} arrived at the {place}, {s} handed the {obj} to",
    "After lunch, {a} and {b} went to the {place}. {s} gave a {obj} to",
)
# Agreement: the subject {n1}, then words between that hold another noun {n2}; the verb next.
AGREEMENT_TEMPLATES = (
    "The {n1} {prep} the {adj} {n2}",
    "The {adj} {n1} {prep} the {n2}",
    "The {n1} {prep} the {n2}",
)
HELD_OUT_AGREEMENT_TEMPLATES = ("The {adj} {n1} {prep} the {adj2} {n2}",)
VERBS = (("is", "are"), ("was", "were"))  # (singular, plural)

STORY_SENTENCES = (
    "One day, {n} went to the {place}.",
    "{p} saw a {adj} {animal} near the {place}.",
    "{n} had {food} with {m} at the {place}.",
    "{n} found a {adj} {obj} in the {place}.",
    "The {animal} was {adj}.",
    "{n} and {m} arrived at the {place} early.",
    "{p} was very happy.",
    "{n} liked the {adj} {obj}.",
    "After {food}, {n} went home.",
    "{n} met {m} at the {place}.",
    "{p} looked at the {adj} {noun}.",
    "Later, {p} walked to the {place} with {m}.",
    "The {noun} {is} {adj}.",  # every noun, held-out ones too, with its own verb
    "The {nouns} {are} {adj}.",
    "{n} saw two {nouns} and a {noun}.",
)
MIX = {"io": 0.3, "agreement": 0.2, "story": 0.15, "induction": 0.35}  # share of items
# Words in the list that is repeated: up to half the context, so the held-out lists of 20
# (english_task.py) are no longer than those seen (with 16 at most, the loss on their
# repeated half rose from 0.3 to over 4 past the 16th token).
INDUCTION_LENGTHS = (5, 24)
UNK = "<unk>"  # the unknown token, first in the vocabulary


@dataclass(frozen=True)
class Example:
    """A prompt and the two candidate next words (each with its leading space)."""
    prompt: str
    right: str
    wrong: str


def io_example(rng: random.Random, held_out: bool) -> Example:
    """One indirect-object prompt: right is the name said once, wrong the name said twice."""
    split = world.split(held_out)
    a, b = rng.sample(split.names, 2)
    s, io = (a, b) if rng.random() < 0.5 else (b, a)
    template = rng.choice(HELD_OUT_IO_TEMPLATES if held_out else IO_TEMPLATES)
    prompt = template.format(a=a, b=b, s=s, place=rng.choice(world.PLACES),
                             obj=rng.choice(split.objects))
    return Example(prompt, " " + io, " " + s)


def agreement_example(rng: random.Random, held_out: bool, attractor: bool | None = None,
                      verbs: tuple[str, str] | None = None) -> Example:
    """One agreement prompt ending before its verb; right agrees with the first noun.
    attractor: the noun between has the other number (True), the same (False), or either."""
    split = world.split(held_out)
    plural = rng.random() < 0.5
    if attractor is None:
        attractor = rng.random() < 0.5
    n1 = rng.choice(split.nouns)[plural]
    n2 = rng.choice(world.NOUNS)[plural != attractor]
    adj, adj2 = rng.sample(world.ADJECTIVES, 2)
    template = rng.choice(HELD_OUT_AGREEMENT_TEMPLATES if held_out else AGREEMENT_TEMPLATES)
    prompt = template.format(n1=n1, n2=n2, adj=adj, adj2=adj2,
                             prep=rng.choice(world.PREPOSITIONS))
    pair = verbs or rng.choice(VERBS)
    return Example(prompt, " " + pair[plural], " " + pair[not plural])


def story(rng: random.Random) -> str:
    """Two to four sentences about one character (any name: held-out names appear here)."""
    n, m = rng.sample([name for name, _ in world.NAMES], 2)
    fill = dict(n=n, m=m, p=world.PRONOUN[n], place=rng.choice(world.PLACES),
                adj=rng.choice(world.ADJECTIVES), animal=rng.choice(world.ANIMALS),
                food=rng.choice(world.FOODS), obj=rng.choice(world.OBJECTS),
                noun=rng.choice(world.NOUNS)[0], nouns=rng.choice(world.NOUNS)[1],
                **dict(zip(("is", "are"), rng.choice(VERBS))))
    first = STORY_SENTENCES[0].format(**fill)
    rest = rng.sample(STORY_SENTENCES[1:], rng.randint(1, 3))
    return " ".join([first] + [s.format(**fill) for s in rest])


def repeated_words(rng: random.Random, words: list[str]) -> str:
    """Random words (each with its leading space), then the same words again."""
    first = "".join(rng.choice(words) for _ in range(rng.randint(*INDUCTION_LENGTHS)))
    return (first + first).lstrip()


def item(rng: random.Random, family: str, words: list[str]) -> str:
    """One training item of a family, as text (the answer included)."""
    if family == "io":
        ex = io_example(rng, held_out=False)
        return ex.prompt + ex.right + "."
    if family == "agreement":
        ex = agreement_example(rng, held_out=False)
        return ex.prompt + ex.right + " " + rng.choice(world.ADJECTIVES) + "."
    if family == "story":
        return story(rng)
    return repeated_words(rng, words)


def training_text(rng: random.Random, n_tokens: int, words: list[str]) -> list[str]:
    """Items of the mixed families, joined by spaces, split into at least n_tokens tokens;
    the first token starts an item (as the prompts the model is tested on do)."""
    families, weights = zip(*MIX.items())
    tokens: list[str] = []
    while len(tokens) < n_tokens:
        text = item(rng, rng.choices(families, weights)[0], words)
        tokens.extend(split_words(text if not tokens else " " + text))
    return tokens


def vocabulary(seed: int = 0, n_items: int = 6000) -> list[str]:
    """Every token the corpus can write: the words of all families in both splits (with and
    without their leading space where the text has both), sorted, the unknown token first."""
    rng = random.Random(seed)
    found: set[str] = set()
    for _ in range(n_items):
        held = rng.random() < 0.5
        texts = [io_example(rng, held).prompt, agreement_example(rng, held).prompt, story(rng)]
        for text in texts:
            found.update(split_words(text), split_words(" " + text))
    words = {w for name, _ in world.NAMES for w in (name, world.PRONOUN[name])}
    words.update(world.OBJECTS, world.PLACES, world.ADJECTIVES, world.PREPOSITIONS,
                 world.ANIMALS, world.FOODS, *world.NOUNS, *VERBS)
    found.update(" " + w for w in words)
    found.update(name for name, _ in world.NAMES)  # a text may start with a name
    return [UNK] + sorted(found)

