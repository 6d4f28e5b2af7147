"""Ready-made inputs, written for this project."""

from __future__ import annotations

import functools
import random
import re

SHORT = "The cat sat on the mat because it was warm."

LONG = (
    "A transformer reads a whole sentence at once. Every token starts as a vector taken from "
    "an embedding table, and a second vector tells the model where in the sentence the token "
    "stands. Inside each layer, every token asks a question with its query vector, and every "
    "other token answers with its key vector. The dot product of a query with a key says how "
    "well they match; after scaling and a softmax, these matches become weights that add up "
    "to one. Each token then collects a weighted mix of the value vectors, so information "
    "flows from the tokens it attends to. Many heads do this side by side, each with its own "
    "queries, keys and values, and each free to look for something different: the previous "
    "word, the end of the sentence, a matching bracket, or the subject of a verb. After the "
    "heads, a small feed-forward network works on each token alone, and residual connections "
    "add every result back onto the stream that carries the token through the layers. Layer "
    "normalization keeps the numbers in a sensible range. Stack six or twelve such layers and "
    "the vectors at the top know a great deal about the words around them. Learners often "
    "find it surprising how much attention goes to special tokens like the separator at the "
    "end: when a head has nothing useful to look at, it can park its attention there, much "
    "like a reader who rests their eyes on the full stop. Looking at these patterns, head by "
    "head and layer by layer, is one of the best ways to build an intuition for what the "
    "model computes, and where that intuition breaks down."
)

PAIR = ("The weather was cold, so she wore a scarf.", "Was it warm outside?")

EXAMPLES = {
    "Short sentence": (SHORT, ""),
    "Long paragraph": (LONG, ""),
    "Sentence pair": PAIR,
}


# ------------------------------------------------------------- text a small model knows
# Models trained here on one narrow kind of text: what they learned from, in one plain line.
# On other English they guess worse than chance, so the sidebar says so and offers a sentence
# of the kind they know.
LEARNED_FROM = {
    "tiny-chars": "tiny-chars learned only from a few paragraphs we wrote about attention and "
                  "simple sentences like them, so on other English it guesses badly.",
    "tiny-induction": "tiny-induction learned only from random lower-case letters and digits "
                      "that repeat, so spaces, capitals and punctuation are all unknown to it.",
    "tiny-reverse": "tiny-reverse learned only to write single short words of lower-case "
                    "letters backwards, so spaces, capitals and punctuation are all unknown to "
                    "it.",
    "tiny-words": "tiny-words learned only from simple sentences about a small world of names, "
                  "objects and places that we wrote, so most other words are unknown to it.",
}
KNOWN_KIND = {"tiny-reverse": "word"}  # what a model's known text is, when not a sentence
REPEATED_SYMBOLS = 12  # tiny-induction's sentence: this many random symbols, then them again


def is_app_example(text: str) -> bool:
    """The sidebar still holds one of the app's own examples (or nothing): not the learner's."""
    ours = {t for t, _ in EXAMPLES.values()}
    return not text.strip() or text.strip() in ours


@functools.cache
def known_sentence(name: str) -> str | None:
    """A sentence of the kind of text `name` was trained on, that fits its context: the first
    sentence of its held-out text (made by the same code as its training text, never trained
    on). None for a model without one."""
    if name not in LEARNED_FROM:
        return None
    if name == "tiny-induction":
        return _repeated_symbols(name)
    if name == "tiny-reverse":
        return _word_to_reverse(name)
    if name == "tiny-words":  # a held-out sentence: who gets the drink?
        from training.english_task import io_examples

        return io_examples(1)[0].prompt
    from model.loading import read_config
    from model.registry import BUNDLED
    from training.tasks import corpus

    try:
        config = read_config(BUNDLED[name]())
        seed, n_ctx = config["training"]["settings"]["seed"], config["config"]["n_ctx"]
    except (KeyError, TypeError, ValueError, OSError):
        return None
    held_out = corpus(seed, n_chars=1)[1]
    sentences = re.split(r"(?<=[.?!])\s+", held_out)
    return next((s.strip() for s in sentences if 0 < len(s.strip()) <= n_ctx), None)


def known_label(name: str) -> str:
    """The button that puts a model's known text in the box: "Use a sentence it knows"."""
    return f"Use a {KNOWN_KIND.get(name, 'sentence')} it knows"


def _word_to_reverse(name: str) -> str | None:
    """The reversal task's own probe word (seven different letters), when it fits the model:
    a word of the kind the reversal model was trained on."""
    from model.loading import read_config
    from model.registry import BUNDLED
    from training.tasks import ReverseTask

    try:
        n_ctx = read_config(BUNDLED[name]())["config"]["n_ctx"]
    except (KeyError, TypeError, ValueError, OSError):
        return None
    word = ReverseTask.probe_word
    return word if len(word) < n_ctx else None  # the word and its end marker


def _repeated_symbols(name: str) -> str | None:
    """Random symbols from the model's own vocabulary (its unknown character left out), then the
    same symbols again: the kind of text an induction model was trained on, all of it readable."""
    from model.registry import BUNDLED
    from model.tokenizer import CharTokenizer

    try:
        tokenizer = CharTokenizer.from_file(BUNDLED[name]() / "tokenizer.json")
    except (KeyError, TypeError, ValueError, OSError):
        return None
    symbols = [c for i, c in enumerate(tokenizer.chars) if i != tokenizer.unk_id]
    first = "".join(random.Random(0).choices(symbols, k=REPEATED_SYMBOLS))
    return first + first
