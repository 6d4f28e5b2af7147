"""Generation, one token at a time, with everything a learner may want to see at each step.

At each step the model reads the text so far (the prompt and the tokens written before) and
scores every vocabulary token as the next one. `choose` turns those scores into a choice:
greedy takes the highest; sampling divides the scores by the temperature, takes the softmax,
keeps the top-k tokens, then the smallest set of the most likely ones whose probability
reaches top-p, and draws from what is left (renormalised) with a seeded generator, so the
same seed gives the same text. Each `Step` records the top 10 of the distribution it drew
from, the chosen token, how much probability top-k and top-p cut away, and the attention row
of the newest token (the last one the model read) over every token before it, for every
layer and head: the row whose output became this step's distribution.

No KV-cache: each step runs the model on the whole text so far. It is simple, and it is
exactly the forward pass every other page shows. When the text grows past the model's
context (n_ctx), the model reads only the last n_ctx tokens (a sliding window; `window_start`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from model.hook_names import hook_names
from model.run import run_with_hooks
from model.runner import EncoderDecoderModel

MAX_NEW_TOKENS = 200  # new tokens per generation
MAX_PROMPT_TOKENS = 256  # prompt tokens (and never more than the model's context)
TOP_SHOWN = 10  # tokens of each step's distribution that are kept for display
MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-3, 100.0


def decoder_unavailable(loaded, purpose: str = "Generation") -> str | None:
    """Why `loaded` cannot score the next token (so `purpose` does not apply), or None."""
    cfg = loaded.cfg
    if isinstance(loaded, EncoderDecoderModel):
        return (f"{purpose} needs a decoder that continues its own text. {loaded.name} is an "
                "encoder–decoder: it rewrites a whole input into an output. Pick a decoder "
                "such as tiny-chars or tiny-induction.")
    if not cfg.causal:
        return (f"{purpose} needs a decoder, a model that predicts the next token. "
                f"{loaded.name} is an encoder: every token sees the whole text, and it has no "
                "next-token head. Pick a decoder such as tiny-chars or tiny-induction.")
    if not cfg.has_lm_head:
        return (f"{purpose} needs the model's next-token head (the unembedding), and "
                f"{loaded.name} was loaded without one. Pick a decoder with its head, such as "
                "tiny-chars or tiny-induction.")
    return None


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen. greedy: the most likely token (the other fields are
    ignored). Otherwise: temperature, then top-k (None: off), then top-p (None or 1: off),
    then a draw seeded by `seed`."""

    greedy: bool = True
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        t, k, p = self.temperature, self.top_k, self.top_p
        if not isinstance(t, (int, float)) or not MIN_TEMPERATURE <= t <= MAX_TEMPERATURE:
            raise ValueError(f"the temperature must be between {MIN_TEMPERATURE} and "
                             f"{MAX_TEMPERATURE:g}, got {t!r}")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
            raise ValueError(f"top-k must be a whole number of at least 1 (or off), got {k!r}")
        if p is not None and (not isinstance(p, (int, float)) or not 0 < p <= 1):
            raise ValueError(f"top-p must be above 0 and at most 1 (or off), got {p!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"the seed must be a whole number, got {self.seed!r}")


@dataclass
class Choice:
    """One next-token choice from one vector of logits."""

    probs: torch.Tensor  # [vocab] float64, the distribution drawn from, before any cut
    kept: torch.Tensor  # [vocab] bool, the tokens top-k and top-p left in
    chosen: int
    cut_top_k: float  # probability (in `probs`) of the tokens top-k removed
    cut_top_p: float  # probability of the tokens top-p removed after top-k

    @property
    def kept_mass(self) -> float:
        return float(self.probs[self.kept].sum())

    @property
    def cut_mass(self) -> float:
        return self.cut_top_k + self.cut_top_p


def choose(logits: torch.Tensor, sampling: Sampling, gen: torch.Generator) -> Choice:
    """The next token from logits [vocab]. Greedy: the argmax of softmax(logits), nothing
    cut. Sampling: softmax(logits / T), top-k, top-p, then a draw from `gen`."""
    logits = logits.detach().double().cpu()  # [vocab]
    if sampling.greedy:
        probs = logits.softmax(-1)  # [vocab]
        return Choice(probs, torch.ones_like(probs, dtype=torch.bool), int(logits.argmax()),
                      0.0, 0.0)
    probs = (logits / sampling.temperature).softmax(-1)  # [vocab]
    order = torch.sort(probs, descending=True, stable=True).indices  # [vocab]
    ranked = probs[order]  # [vocab], most likely first
    n_k = min(sampling.top_k or ranked.numel(), ranked.numel())
    n_p = n_k
    if sampling.top_p is not None and sampling.top_p < 1:
        cum = (ranked[:n_k] / ranked[:n_k].sum()).cumsum(0)  # [n_k], renormalised after top-k
        n_p = min(int((cum < sampling.top_p).sum()) + 1, n_k)  # smallest set reaching top-p
    kept = torch.zeros_like(probs, dtype=torch.bool)  # [vocab]
    kept[order[:n_p]] = True
    draw = torch.where(kept, probs, torch.zeros_like(probs))  # [vocab]
    chosen = int(torch.multinomial(draw / draw.sum(), 1, generator=gen))
    return Choice(probs, kept, chosen, float(ranked[n_k:].sum()), float(ranked[n_p:n_k].sum()))


@dataclass
class Step:
    """One generated token. The newest token (ids[position]) read every token from
    ids[window_start] to itself; `attention` is its row, and the model's output there is
    the distribution the chosen token was drawn from."""

    position: int  # index in Generation.ids of the token whose attention row this is
    window_start: int  # first index the model read (0 until the text outgrows the context)
    top_ids: list[int]  # [TOP_SHOWN], most likely first
    top_probs: list[float]  # [TOP_SHOWN], in the distribution drawn from
    top_kept: list[bool]  # [TOP_SHOWN], False where top-k or top-p cut the token away
    chosen: int
    chosen_prob: float
    kept_mass: float  # probability of the tokens left after top-k and top-p
    cut_top_k: float  # probability cut away by top-k
    cut_top_p: float  # probability cut away by top-p (after top-k)
    n_kept: int  # how many tokens were left to draw from
    attention: torch.Tensor  # [layer, head, k_pos], keys ids[window_start : position + 1]

    @property
    def cut_mass(self) -> float:
        return self.cut_top_k + self.cut_top_p


@dataclass
class Generation:
    prompt_ids: list[int]
    ids: list[int]  # the prompt, then the new tokens
    tokens: list[str]  # one string per id
    new_text: str  # the new tokens decoded
    steps: list[Step]
    sampling: Sampling
    notes: list[str] = field(default_factory=list)  # e.g. the window slid
    stopped_at_end: bool = False  # True: it stopped early, on a token of `stop_ids`

    @property
    def why_stopped(self) -> str:
        """One plain sentence: why the text ends where it does."""
        n = len(self.new_ids)
        written = "1 new token" if n == 1 else f"{n} new tokens"
        if self.stopped_at_end:
            return f"Stopped after {written}: the model wrote an end token."
        return (f"Stopped after {written}, the number asked for, so the text may end in the "
                "middle of a word.")

    @property
    def n_prompt(self) -> int:
        return len(self.prompt_ids)

    @property
    def new_ids(self) -> list[int]:
        return self.ids[self.n_prompt:]


def _step_forward(loaded, window: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """One run on `window`: the last position's logits [vocab] and its attention rows
    [layer, head, k_pos], read through hook points (nothing is attached to the model)."""
    rows: dict[str, torch.Tensor] = {}

    def grab(pattern: torch.Tensor, name: str) -> None:  # [1, head, q_pos, k_pos]
        rows[name] = pattern[0, :, -1, :].detach().float().cpu()  # [head, k_pos]

    ids = torch.tensor([window], dtype=torch.long, device=loaded.device)  # [1, pos]
    names = hook_names(loaded.cfg).every_layer("attn", "pattern")
    out, _ = run_with_hooks(loaded, ids, hooks=[(n, grab) for n in names])
    attention = torch.stack([rows[n] for n in names])  # [layer, head, k_pos]
    return out.logits[0, -1].float().cpu(), attention  # [vocab], [layer, head, k_pos]


def check_new_tokens(n_new) -> None:
    """A count of new tokens to write: a whole number from 1 to MAX_NEW_TOKENS."""
    if not isinstance(n_new, int) or isinstance(n_new, bool) or not 1 <= n_new <= MAX_NEW_TOKENS:
        raise ValueError(f"the number of new tokens must be between 1 and {MAX_NEW_TOKENS}, "
                         f"got {n_new!r}")


def _check(loaded, n_new: int, n_prompt: int) -> None:
    why = decoder_unavailable(loaded)
    if why:
        raise ValueError(why)
    check_new_tokens(n_new)
    limit = min(MAX_PROMPT_TOKENS, loaded.cfg.n_ctx)
    if n_prompt > limit:
        raise ValueError(f"the prompt is {n_prompt} tokens long; generation takes at most "
                         f"{limit} (this model reads {loaded.cfg.n_ctx} tokens at a time). "
                         "Shorten the prompt.")


def generate_ids(loaded, prompt_ids, n_new: int, sampling: Sampling = Sampling(),
                 stop_ids=()) -> Generation:
    """Generate `n_new` tokens after token ids `prompt_ids` ([pos] list or tensor), one
    full forward pass per step. Stops early after a token in `stop_ids`."""
    prompt = [int(i) for i in torch.as_tensor(prompt_ids, dtype=torch.long).reshape(-1)]
    if not prompt:
        raise ValueError("the prompt is empty: type something for the model to continue")
    if min(prompt) < 0 or max(prompt) >= loaded.cfg.d_vocab:
        raise ValueError(f"token ids must lie in [0, {loaded.cfg.d_vocab})")
    _check(loaded, n_new, len(prompt))
    gen = torch.Generator().manual_seed(sampling.seed)
    ids, steps, n_ctx = list(prompt), [], loaded.cfg.n_ctx
    stop, ended = {int(s) for s in stop_ids}, False
    for _ in range(n_new):
        start = max(0, len(ids) - n_ctx)
        logits, attention = _step_forward(loaded, ids[start:])  # [vocab], [layer, head, k]
        choice = choose(logits, sampling, gen)
        top = torch.topk(choice.probs, min(TOP_SHOWN, choice.probs.numel()))
        steps.append(Step(
            position=len(ids) - 1, window_start=start, top_ids=top.indices.tolist(),
            top_probs=top.values.tolist(), top_kept=choice.kept[top.indices].tolist(),
            chosen=choice.chosen, chosen_prob=float(choice.probs[choice.chosen]),
            kept_mass=choice.kept_mass, cut_top_k=choice.cut_top_k, cut_top_p=choice.cut_top_p,
            n_kept=int(choice.kept.sum()), attention=attention))
        ids.append(choice.chosen)
        if choice.chosen in stop:
            ended = True
            break
    notes = []
    if len(ids) - 1 > n_ctx:
        notes.append(f"The text grew past the {n_ctx} tokens this model reads at a time, so "
                     f"from then on each step read only the last {n_ctx} tokens.")
    return Generation(prompt_ids=prompt, ids=ids, tokens=loaded.tokenizer.tokens(ids),
                      new_text=loaded.tokenizer.decode(ids[len(prompt):]), steps=steps,
                      sampling=sampling, notes=notes, stopped_at_end=ended)


def prompt_window(loaded, text: str, limit: int | None = None) -> tuple[list[int], int]:
    """The token ids of `text`, tokenized as every page does (special tokens included) but not
    cut to the context, then only its LAST `limit` (default: MAX_PROMPT_TOKENS, at most the
    model's context), so that generation continues from where the prompt ends. Returns
    (ids, how many tokens were left out at the start)."""
    limit = limit or min(MAX_PROMPT_TOKENS, loaded.cfg.n_ctx)
    enc = loaded.encode(text)
    n_full = int(enc.attention_mask[0].sum()) + enc.n_dropped[0]
    if enc.n_dropped[0]:  # encode again, this time without the cut at the context
        enc = loaded.tokenizer.encode([text], None, n_full)
    ids = [int(i) for i in enc.input_ids[0, :int(enc.attention_mask[0].sum())].tolist()]
    return ids[-limit:], max(0, len(ids) - limit)


def generate(loaded, prompt: str, n_new: int, sampling: Sampling = Sampling(),
             stop_ids=()) -> Generation:
    """Tokenize `prompt` (as every page does, special tokens included) and generate."""
    why = decoder_unavailable(loaded)
    if why:
        raise ValueError(why)
    enc = loaded.encode(prompt)
    n_prompt = int(enc.attention_mask[0].sum()) + enc.n_dropped[0]
    _check(loaded, n_new, n_prompt)
    return generate_ids(loaded, enc.input_ids[0, :n_prompt], n_new, sampling, stop_ids)
