"""The facts a lesson may state. Each is computed from the model and the step's text, so a
lesson never types a number: "head {prev.layer}.{prev.head} puts {prev.share:.0%} of each row
on the previous token" is filled in from the run, and tests/unit/test_lesson_claims.py checks
every fact of every bundled lesson against an independent computation.

A fact is a function of `FactInputs` returning a dict of its fields. Facts used in a step's
page settings (layer = "{prev.layer}") must not depend on those settings.
"""

from __future__ import annotations

import numpy as np
import torch

from analysis.head_stats import head_statistics, unknown_token

from .fact_base import Fact, FactError, FactInputs, plain  # noqa: F401 (others import them here)
from .facts_check import CHECK_FACTS
from .facts_lab import LAB_FACTS
from .facts_scores import SCORE_FACTS
from .facts_words import WORDS_FACTS


def _stats(f: FactInputs) -> dict[str, np.ndarray]:
    trace = f.trace
    return head_statistics(trace.attentions, trace.tokens, trace.special_mask[0],
                           trace.attention_mask[0], unknown_token(f.model.tokenizer))


AMOUNTS = ("less than a quarter", "between a quarter and three quarters",
           "more than three quarters")


def amount(share: float) -> str:
    """A share in the words lesson options use (AMOUNTS)."""
    return AMOUNTS[0] if share < 0.25 else AMOUNTS[1] if share < 0.75 else AMOUNTS[2]


def _best(statistic: str):
    def compute(f: FactInputs) -> dict:
        values = _stats(f)[statistic]  # [n_layers, head]
        layer, head = divmod(int(values.argmax()), values.shape[1])
        share = float(values[layer, head])
        return {"layer": layer, "head": head, "share": share, "bits": share,
                "amount": amount(share)}
    return compute


def _run(f: FactInputs) -> dict:
    cfg = f.trace.cfg
    name = f.trace.model_name
    markers = int(f.trace.special_mask[0].sum())  # the model's own tokens ([CLS], [SEP], ...)
    return {"model": f.label(name) if f.label else name, "tokens": f.trace.n_tokens, "layers": cfg.n_layers,
            "heads": cfg.n_heads, "heads_total": cfg.n_layers * cfg.n_heads,
            "d_model": cfg.d_model, "d_head": cfg.d_head, "d_mlp": cfg.d_mlp,
            "vocab": cfg.d_vocab, "first": plain(f.trace.tokens[0]),
            "last": plain(f.trace.tokens[-1]), "markers": markers,
            "pieces": f.trace.n_tokens - markers, "words": len(f.trace.texts[0].split())}


def _sink(f: FactInputs) -> dict:
    best = _best("special")(f)
    special = f.trace.special_mask[0].bool()
    row = f.trace.attentions[best["layer"], best["head"]].mean(0)  # [k_pos], mean over queries
    where = int(torch.where(special, row, torch.full_like(row, -1.0)).argmax())
    mostly = ("on the special tokens at the ends" if best["share"] >= 0.5
              else "spread over the words")
    return {**best, "token": f.trace.tokens[where], "mostly": mostly}


def same_word_scores(trace) -> tuple[np.ndarray, list[int]]:
    """[n_layers, head]: the mean share of a token's row on the other copies of the same token
    (over the tokens that occur more than once), and those tokens' positions."""
    tokens = [plain(t).lower() for t in trace.tokens]
    special = trace.special_mask[0].bool().tolist()
    rows, cols = [], []
    for i, t in enumerate(tokens):
        copies = [j for j, u in enumerate(tokens) if u == t and j != i and not special[j]]
        if copies and not special[i] and t.isalpha():
            rows.append(i)
            cols.append(copies)
    if not rows:
        raise FactError("the text has no word twice, so there is no same-word head to find")
    a = trace.attentions.double()  # [n_layers, head, q, k]
    shares = torch.stack([a[:, :, i, c].sum(-1) for i, c in zip(rows, cols)], -1)  # [L, H, rows]
    return shares.mean(-1).numpy(), rows


def _same_word(f: FactInputs) -> dict:
    scores, rows = same_word_scores(f.trace)
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    tokens = [plain(t).lower() for t in f.trace.tokens]
    a = f.trace.attentions[layer, head]  # [q_pos, k_pos]
    on_copies = [float(a[i, [j for j, u in enumerate(tokens) if u == tokens[i] and j != i]].sum())
                 for i in rows]  # the word this head links most strongly to its copies
    return {"layer": layer, "head": head, "share": float(scores[layer, head]),
            "word": plain(f.trace.tokens[rows[int(np.argmax(on_copies))]])}


def rows_summary(count: int, low: float, high: float) -> str:
    """The row sums in words, at 2 decimals: "all 936 rows add up to 1.00", and "between"
    only when the two ends differ at that precision."""
    if f"{low:.2f}" == f"{high:.2f}":
        return f"all {count:,} rows add up to {high:.2f}"
    return f"the {count:,} rows add up to between {low:.2f} and {high:.2f}"


def _rows(f: FactInputs) -> dict:
    sums = f.trace.attentions.double().sum(-1)  # [n_layers, head, q]
    one = float((sums - 1).abs().max()) < 1e-4
    low, high, count = float(sums.min()), float(sums.max()), int(sums.numel())
    return {"sum": float(sums.mean()), "min": low, "max": high, "rows": count,
            "total": "exactly one" if one else "not always one",
            "summary": rows_summary(count, low, high)}


SPREAD_SHOWN = 3  # the biggest squares a row's sum is written with


def _spread(f: FactInputs) -> dict:
    """A row of the step's head to add up by hand: of the text's own tokens (not the markers),
    the row whose attention is most spread out (highest entropy), written as its biggest
    squares and the rest. The written numbers add up to the written total: `rest` is the total
    less the biggest squares as written (within a rounding of the true rest)."""
    layer, head = int(f.settings.get("layer", 0)), int(f.settings.get("head", 0))
    a = f.trace.attentions[layer, head].double()  # [q_pos, k_pos]
    entropy = -(a * torch.log(a.clamp_min(1e-12))).sum(-1)  # [q_pos]
    entropy[f.trace.special_mask[0].bool()] = -1.0
    i = int(entropy.argmax())
    row = a[i]
    top = [round(float(v), 2) for v in row.sort(descending=True).values[:SPREAD_SHOWN]]
    total = round(float(row.sum()), 2)
    said = ", ".join(f"{v:.2f}" for v in top[:-1]) + f" and {top[-1]:.2f}"
    return {"token": plain(f.trace.tokens[i]), "top": said, "shown": len(top),
            "others": len(row) - len(top), "rest": round(total - sum(top), 2), "total": total,
            "largest": float(row.max()), "row": i}


def _mask(f: FactInputs) -> dict:
    a = f.trace.attentions  # [n_layers, head, q, k]
    above = torch.triu(torch.ones(a.shape[-2:], dtype=torch.bool), diagonal=1)
    top = float(a[..., above].abs().max()) if above.any() else 0.0
    below = torch.tril(torch.ones(a.shape[-2:], dtype=torch.bool), diagonal=-1)
    low = float(a[..., below].abs().max()) if below.any() else 0.0
    where = ("above the diagonal (keys after the query)" if top == 0 and low > 0 else
             "below the diagonal (keys before the query)" if low == 0 and top > 0 else "nowhere")
    return {"above": top, "first": float(a[..., 0, 0].min()), "tokens": f.trace.n_tokens,
            "causal": "yes" if f.trace.cfg.causal else "no", "where": where}


def _positions(f: FactInputs) -> dict:
    from analysis.positions import model_positions, position_similarity, similarity_by_distance

    n = min(64, f.model.model.cfg.n_ctx)
    table = model_positions(f.model.model, n)
    by_distance = similarity_by_distance(position_similarity(table.table.float()))  # [n]
    far = n // 2
    near, distant = float(by_distance[1]), float(by_distance[far])
    pattern = ("yes, neighbours are more alike" if near > distant + 0.1
               else "no, there is no such pattern")
    return {"kind": table.kind, "near": near, "far": distant, "far_distance": far, "count": n,
            "pattern": pattern}


def _cross(f: FactInputs) -> dict:
    """The reversal model: for every output letter, where its last decoder layer's heads look
    in the source; `share` is how many of those rows look hardest at the letter being copied."""
    trace = f.trace
    if trace.kind != "encoder_decoder":
        raise FactError("cross-attention needs the encoder-decoder (tiny-reverse)")
    source = trace.tokens
    written = trace.output_tokens[0][:-1]  # the letters it wrote, without the end mark
    cross = trace.cross_attentions  # [layer, head, out_pos, src_pos]
    best, layer = None, cross.shape[0] - 1
    for head in range(cross.shape[1]):
        hits = [int(cross[layer, head, i].argmax()) == j
                for i, j in enumerate(_mirror(source, written))]
        share = sum(hits) / max(1, len(hits))
        if best is None or share > best["share"]:
            best = {"layer": layer, "head": head, "share": share, "rows": len(hits)}
    first = int(cross[layer, best["head"], 0].argmax())  # where the first written letter looks
    mirror = _mirror(source, written)
    looks = ("the last letter" if mirror and first == mirror[0] else
             "the first letter" if first == 0 else "another letter")
    return {**best, "output": trace.outputs[0], "input": "".join(source[:-1]),
            "first_looks": looks}


def _mirror(source: list[str], written: list[str]) -> list[int]:
    """For output letter i of a reversed word, the source position it copies."""
    word_end = source.index("$") if "$" in source else len(source)
    return [word_end - 1 - i for i in range(min(len(written), word_end))]


def _cell(f: FactInputs) -> dict:
    layer, head = int(f.settings.get("layer", 0)), int(f.settings.get("head", 0))
    i = find_row(f.trace.tokens, f.row)
    row = f.trace.attentions[layer, head, i]  # [k_pos]
    j = int(row.argmax())
    return {"token": plain(f.trace.tokens[i]), "brightest": plain(f.trace.tokens[j]),
            "share": float(row[j]), "row": i, "column": j}


def find_row(tokens: list[str], wanted: str) -> int:
    """The position of the first token that reads as `wanted` (case-insensitive)."""
    wanted = wanted.strip().lower()
    for i, token in enumerate(tokens):
        if plain(token).lower() == wanted or token.lower() == wanted:
            return i
    raise FactError(f"the text has no token “{wanted}”")


def _head(f: FactInputs) -> dict:
    layer, head = int(f.settings.get("layer", 0)), int(f.settings.get("head", 0))
    stats = _stats(f)
    return {name: float(stats[name][layer, head])
            for name in ("previous", "next", "self", "special", "entropy", "distance")}


WALK_KEYS = ("tokens", "embed_tok", "embed_pos", "embed_sum", "qkv_proj", "split_heads",
             "scores", "scale", "mask", "softmax", "weighted_values", "join_heads", "mlp_up",
             "mlp_act", "stack", "output", "next_token", "attention_mask", "token_types",
             "embed_type", "embed_norm", "layer_input", "ln_attn", "k_transpose", "attn_out",
             "add_norm_attn", "resid_attn", "ln_mlp", "mlp_down", "add_norm_mlp", "resid_mlp",
             "final_norm", "unembed", "pooler")
WALK_NAMES = {"ln_attn": "ln1", "ln_mlp": "ln2"}  # a fact's field has no digits


def _walk(f: FactInputs) -> dict:
    """The number (1-based, as the walkthrough shows it) of each step of the forward pass."""
    from analysis.walkthrough import walkthrough

    full = f.model.run(f.trace.texts[0], f.trace.texts[1] if len(f.trace.texts) > 1 else None,
                       keep=None)
    numbers = {step.key: i for i, step in enumerate(walkthrough(full, 0), 1)}
    return {key: numbers.get(WALK_NAMES.get(key, key)) for key in WALK_KEYS} | {
        "count": len(numbers)}


JUMP_SCORE = 0.5  # the induction score that counts as "formed"


def when_phrase(step: int | None, steps: int) -> str:
    """Where in a run a jump happened, in the words the induction lesson's options use."""
    if step is None:
        return "not in this run"
    if step <= steps / 10:
        return "almost at once"
    return "in the first half of the run" if step <= steps / 2 else "in the second half of the run"


def induction_run(settings) -> dict:
    """Train the induction task with `settings` (training.train.TrainSettings) and find the
    first snapshot whose induction score reaches JUMP_SCORE. No time limit: the same
    settings give the same run on any machine, however busy."""
    import dataclasses

    from training.tasks import make_task
    from training.train import train

    result = train(make_task("induction"), dataclasses.replace(settings, max_seconds=None))
    scores = [(snap.step, snap.metrics["induction score"]) for snap in result.snapshots]
    jump = next((step for step, score in scores if score >= JUMP_SCORE), None)
    steps = len(result.losses)
    rises = [(b - a, step) for (_, a), (step, b) in zip(scores, scores[1:])]
    rise, rise_step = max(rises) if rises else (0.0, 0)
    return {"step": jump if jump is not None else steps, "steps": steps,
            "score": scores[-1][1], "when": when_phrase(jump, steps), "jumped": jump is not None,
            "threshold": JUMP_SCORE, "rise": rise, "rise_step": rise_step,
            "how": how_it_rose(scores, steps), "scores": scores}


ROSE = ("most of it within a fifth of the run", "about evenly, a little at every step")


def how_it_rose(scores: list[tuple[int, float]], steps: int) -> str:
    """ROSE[0] when some stretch of a fifth of the run holds at least half of the score's
    whole rise (first snapshot to last), else ROSE[1]."""
    total = scores[-1][1] - scores[0][1] if scores else 0.0
    best = max((b - a for i, (s, a) in enumerate(scores) for t, b in scores[i + 1:]
                if t - s <= steps / 5), default=0.0)
    return ROSE[0] if total > 0 and best >= total / 2 else ROSE[1]


def _induction_head(f: FactInputs) -> dict:
    """On a text made of one stretch typed twice: the head whose second-copy rows look most at
    the token after the earlier copy (the induction score), and layer 0's best previous-token
    head."""
    from analysis.induction import induction_score

    n = f.trace.n_tokens - (f.trace.n_tokens % 2)
    tokens = f.trace.tokens
    if n < 4 or tokens[: n // 2] != tokens[n // 2: n]:
        raise FactError("the induction score needs a text that is one stretch typed twice")
    a = f.trace.attentions[:, :, :n, :n]  # [n_layers, head, q, k]
    scores = torch.stack([induction_score(a[layer][None]) for layer in range(a.shape[0])])
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    prev = a[0].diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)  # [head]
    return {"layer": layer, "head": head, "score": float(scores[layer, head]),
            "prev_head": int(prev.argmax()), "prev_share": float(prev.max()), "length": n // 2,
            "a": plain(tokens[0]), "b": plain(tokens[1])}


def _induction(f: FactInputs) -> dict:
    if f.train is None:
        raise FactError("the induction run is only available in the app")
    return f.train()


FACTS: dict[str, Fact] = {
    "run": Fact(("model", "tokens", "layers", "heads", "heads_total", "d_model", "d_head",
                 "d_mlp", "vocab", "first", "last", "markers", "pieces", "words"), _run,
                describe="the model and the text"),
    "prev": Fact(("layer", "head", "share", "amount"), _best("previous"),
                 describe="the head that looks most at the previous token"),
    "next": Fact(("layer", "head", "share", "amount"), _best("next"),
                 describe="the head that looks most at the next token"),
    "selfish": Fact(("layer", "head", "share", "amount"), _best("self"),
                    describe="the head that looks most at the token itself"),
    "sink": Fact(("layer", "head", "share", "token", "mostly"), _sink,
                 describe="the head that puts most attention on special tokens"),
    "broad": Fact(("layer", "head", "bits"), _best("entropy"),
                  describe="the head that spreads its attention most evenly"),
    "samew": Fact(("layer", "head", "share", "word"), _same_word,
                  describe="the head that looks most at other copies of the same word"),
    "rows": Fact(("sum", "min", "max", "rows", "total", "summary"), _rows,
                 describe="row sums of every head"),
    "mask": Fact(("above", "first", "tokens", "causal", "where"), _mask,
                 describe="attention above the diagonal, and the first token's row"),
    "pos": Fact(("kind", "near", "far", "far_distance", "count", "pattern"), _positions,
                describe="how alike position vectors are, near and far"),
    "cross": Fact(("layer", "head", "share", "rows", "output", "input", "first_looks"),
                  _cross,
                  describe="the reversal model's cross-attention"),
    "spread": Fact(("token", "top", "shown", "others", "rest", "total", "largest"), _spread,
                   uses_settings=True,
                   describe="the most spread-out row of the step's head, to add up by hand"),
    "cell": Fact(("token", "brightest", "share"), _cell, uses_settings=True,
                 describe="the brightest cell of the question's row"),
    "head": Fact(("previous", "next", "self", "special", "entropy", "distance"), _head,
                 uses_settings=True, describe="the statistics of the step's head"),
    "walk": Fact(WALK_KEYS + ("count",), _walk,
                 describe="the number of each step of the forward-pass walkthrough"),
    "indhead": Fact(("layer", "head", "score", "prev_head", "prev_share", "length", "a", "b"),
                    _induction_head, describe="the induction head on a stretch typed twice"),
    "induction": Fact(("step", "steps", "score", "when", "threshold", "rise", "rise_step",
                       "how"),
                      _induction,
                      describe="when induction heads form in the training page's default run"),
}


FACTS.update(LAB_FACTS)
FACTS.update(SCORE_FACTS)
FACTS.update(WORDS_FACTS)
FACTS.update(CHECK_FACTS)


def compute(name: str, inputs: FactInputs) -> dict:
    if name not in FACTS:
        raise FactError(f"no fact called {name!r}")
    return FACTS[name].compute(inputs)
