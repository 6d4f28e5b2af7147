"""The word-level English decoder's task: its vocabulary, batches of the mixed corpus
(english_corpus.py), and its behaviours measured on held-out sentences.

    python -m training --task english --seed 0 --out weights/tiny-words
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from analysis.behaviours import ChoiceScores, choice_scores, repeat_losses
from analysis.induction import pattern_cache, repeat_scores
from model.hook_names import hook_names
from model.tokenizer import WordTokenizer, split_words

from . import english_corpus as corpus
from .task_base import Task, _own_config

INDUCTION_LENGTH = 20  # words in each held-out repeated list (then the same words again)
EVAL_SEED = 2024  # the held-out sentences' seed: never the training stream's


@dataclass(frozen=True)
class Behaviours:
    """The decoder's held-out behaviours (english_task.behaviours)."""
    io: ChoiceScores  # right = the name said once, wrong = the name said twice
    agreement: ChoiceScores  # right = the verb that agrees, on sentences with an attractor
    first_half_loss: float  # on random words...
    repeat_loss: float  # ...and on the same words again
    induction_score: float  # the best head's (analysis/induction.py)
    induction_head: tuple[int, int]  # (layer, head) of that head

    @property
    def repeat_ratio(self) -> float:
        return self.repeat_loss / self.first_half_loss

    def metrics(self) -> dict[str, float]:
        return {"indirect object accuracy": self.io.top_accuracy,
                "indirect object logit difference": self.io.mean_logit_diff,
                "agreement accuracy": self.agreement.pair_accuracy,
                "repeated half loss / first half loss": self.repeat_ratio,
                "induction score": self.induction_score}


class EnglishTask(Task):
    key, title = "english", "Word-level English (our own small world)"
    n_ctx = 48
    attn_only = True  # attention alone does all three behaviours, in a third of the time

    def __init__(self) -> None:
        self.tokenizer = WordTokenizer(corpus.vocabulary())
        self.words = self.tokenizer.words
        self.plain_words = [w for w in self.words if w.startswith(" ") and w[1:].isalpha()]
        probe = corpus.io_example(random.Random(0), held_out=False)
        self.probe_tokens = split_words(probe.prompt)

    def tokenizer_data(self) -> dict:
        return {"words": self.words, "unk": corpus.UNK}

    def config(self, n_layers, n_heads, d_model):
        mlp = dict(d_mlp=0, attn_only=True) if self.attn_only else dict(d_mlp=4 * d_model)
        # Sinusoidal positions: "the word before" is a fixed rotation of the position's vector
        # from the start, so previous-word heads (and induction after them) form sooner.
        return _own_config(d_model=d_model, n_heads=n_heads, n_layers=n_layers, n_ctx=self.n_ctx,
                           d_vocab=len(self.words), positions="sinusoidal", **mlp)

    def batch(self, gen, batch_size):
        rng = random.Random(int(torch.randint(0, 2**62, (1,), generator=gen)))
        rows = [self.tokenizer.rows(["".join(corpus.training_text(rng, self.n_ctx,
                                                                  self.plain_words))])[0]
                for _ in range(batch_size)]
        return {"ids": torch.tensor([r[: self.n_ctx] for r in rows])}  # [batch, pos]

    def probe(self):
        return self.probe_tokens, self.probe_tokens

    def snapshot(self, model):
        ids = torch.tensor([[self.tokenizer.index[w] for w in self.probe_tokens]])  # [1, pos]
        cache = pattern_cache(model, ids)
        return torch.stack([cache[name][0] for name in hook_names(model.cfg).every_layer(
            "attn", "pattern")]).half().numpy()

    def evaluate(self, model):
        return behaviours(model, self.tokenizer, n=200).metrics()


def held_out_choices(tokenizer: WordTokenizer, examples: list[corpus.Example]):
    """(prompt ids, right ids, wrong ids) of examples whose answers are single tokens."""
    prompts = tokenizer.rows([ex.prompt for ex in examples])
    return prompts, [tokenizer.index[ex.right] for ex in examples], \
        [tokenizer.index[ex.wrong] for ex in examples]


def io_examples(n: int, seed: int = EVAL_SEED, held_out: bool = True) -> list[corpus.Example]:
    """Held-out templates, names and objects (or, held_out=False, fresh sentences of the
    training templates and names)."""
    rng = random.Random(seed)
    return [corpus.io_example(rng, held_out) for _ in range(n)]


def agreement_examples(n: int, seed: int = EVAL_SEED) -> list[corpus.Example]:
    """Held-out template and subject nouns, the noun between of the other number."""
    rng = random.Random(seed + 1)
    return [corpus.agreement_example(rng, held_out=True, attractor=True, verbs=corpus.VERBS[0])
            for _ in range(n)]


def repeated_ids(tokenizer: WordTokenizer, n: int, seed: int = EVAL_SEED,
                 length: int = INDUCTION_LENGTH) -> torch.Tensor:
    """[n, 2 * length]: distinct random words, then the same words again."""
    rng = random.Random(seed + 2)
    plain = [i for w, i in tokenizer.index.items() if w.startswith(" ") and w[1:].isalpha()]
    first = [rng.sample(plain, length) for _ in range(n)]
    return torch.tensor([row + row for row in first])


@torch.no_grad()
def behaviours(model, tokenizer: WordTokenizer, n: int = 500, seed: int = EVAL_SEED) -> Behaviours:
    """The decoder's behaviours on n held-out examples of each kind."""
    was_training = model.training
    model.eval()
    try:
        io = choice_scores(model, *held_out_choices(tokenizer, io_examples(n, seed)))
        agreement = choice_scores(model, *held_out_choices(tokenizer,
                                                           agreement_examples(n, seed)))
        first, second = repeat_losses(model, repeated_ids(tokenizer, min(n, 200), seed))
        scores = repeat_scores(model, n_seqs=64, length=INDUCTION_LENGTH)["induction"]
    finally:
        model.train(was_training)
    best = int(scores.argmax())
    layer, head = divmod(best, scores.shape[1])
    return Behaviours(io, agreement, first, second, float(scores.max()), (layer, head))
