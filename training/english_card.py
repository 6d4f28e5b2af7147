"""tiny-words' model card: which heads do what on "who gets the drink?", computed from the
shipped weights with the app's own tools, never typed in.

On fresh sentences of the training templates and names (where the model has the behaviour;
on the held-out split it does not yet, see weights/README.md):

- activation patching (analysis/patching.py): clean = an indirect-object prompt,
  corrupted = the same prompt with the giver swapped for the other name, so the answer flips;
  patching one head's output from the clean run back in, how much of the logit difference
  (right name minus repeated name) comes back. Heads that carry the answer score high.
- direct logit attribution (analysis/attribution.py): how much each head writes into that
  logit difference itself. Name movers write it (positive); heads that push the other way
  come out negative.
- where the name movers look: their attention from the last word to the right name and to
  the repeated name.

    python -m training.english_card [--n 20]   # rewrites weights/tiny-words/card.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from analysis.attribution import attribute_ids
from analysis.patching import head_patching, prepare_ids

from .english_task import io_examples

CARD_FILE = Path(__file__).resolve().parent.parent / "weights" / "tiny-words" / "card.json"
N_PROMPTS = 20
TOP = 3  # heads named in each role, at most
# A head is named as writing the answer only if it adds at least this much to the logit
# difference: below it, the part is small next to the whole (5 and more) and which head has
# it changes from sentence to sentence.
MIN_WRITE = 1.0


def swap_giver(prompt: str, right: str, wrong: str) -> str:
    """The prompt with its last mention of the repeated name (the giver) replaced by the
    right name: the name said twice becomes the other one, so the answer flips."""
    head, _, tail = prompt.rpartition(wrong)
    return head + right + tail


def _name_positions(tokens: list[str], name: str) -> list[int]:
    return [i for i, t in enumerate(tokens) if t.strip() == name.strip()]


def head_roles(loaded, n: int = N_PROMPTS) -> dict:
    """Mean patching effect, direct attribution and attention of every head over n fresh
    indirect-object prompts of the training templates: {"patching", "attribution": [layer][head],
    "attention_to_right", "attention_to_repeated": [layer][head] from the last word, "n",
    "right_first": the share of prompts whose likeliest next word is the right name}."""
    cfg = loaded.cfg
    patching = np.zeros((cfg.n_layers, cfg.n_heads))
    direct = np.zeros((cfg.n_layers, cfg.n_heads))
    to_right = np.zeros((cfg.n_layers, cfg.n_heads))
    to_repeated = np.zeros((cfg.n_layers, cfg.n_heads))
    right_first = 0  # prompts whose likeliest next word is the right name
    tok = loaded.tokenizer
    for ex in io_examples(n, held_out=False):
        clean = torch.tensor(tok.rows([ex.prompt])[0])  # [pos]
        corrupted = torch.tensor(tok.rows([swap_giver(ex.prompt, ex.right, ex.wrong)])[0])
        right, wrong = tok.index[ex.right], tok.index[ex.wrong]
        p = prepare_ids(loaded, clean, corrupted, answer=right, wrong=wrong)
        patching += head_patching(p)
        direct += attribute_ids(loaded, clean, target=right, baseline=wrong).heads
        tokens = tok.tokens(clean.tolist())
        run = loaded.run_ids(clean)
        right_first += int(run.logits[0, -1].argmax()) == right
        pattern = run.attentions[:, :, -1]  # [layer, head, k_pos]
        to_right += pattern[:, :, _name_positions(tokens, ex.right)].sum(-1).numpy()
        to_repeated += pattern[:, :, _name_positions(tokens, ex.wrong)].sum(-1).numpy()
    return {"n": n, "right_first": right_first / n, **{k: (v / n).round(3).tolist() for k, v in (
        ("patching", patching), ("attribution", direct), ("attention_to_right", to_right),
        ("attention_to_repeated", to_repeated))}}


def _top(grid, largest: bool = True, least: float | None = None) -> list[list[int]]:
    """The TOP biggest (or smallest) cells as [layer, head], those under `least` left out
    (the first one is kept whatever its size)."""
    flat = np.asarray(grid).ravel()
    order = np.argsort(-flat if largest else flat)[:TOP]
    order = [i for k, i in enumerate(order) if k == 0 or least is None or flat[i] >= least]
    n_heads = np.asarray(grid).shape[1]
    return [[int(i) // n_heads, int(i) % n_heads] for i in order]


def card(loaded, n: int = N_PROMPTS) -> dict:
    """The roles and the heads named in each (layer, head)."""
    roles = head_roles(loaded, n)
    return {**roles,
            "name_movers": _top(roles["attribution"], least=MIN_WRITE),  # write the answer
            "against": _top(roles["attribution"], largest=False),  # write the other way
            "carriers": _top(roles["patching"])}  # patched back, bring the answer back


def describe(c: dict) -> list[str]:
    """The card in plain sentences (for weights/README.md and the app)."""
    def head(lh):
        return f"layer {lh[0]} head {lh[1]}"

    lines = []
    for lh in c["name_movers"]:
        layer, h = lh
        right, repeated = c["attention_to_right"][layer][h], c["attention_to_repeated"][layer][h]
        does = ("copies the right name" if right > repeated else "pushes down the repeated name")
        lines.append(f"{head(lh)} {does}: {c['attribution'][layer][h]:+.2f} of the logit "
                     f"difference; from the last word it looks {right:.0%} at the right name "
                     f"and {repeated:.0%} at the repeated one.")
    for lh in c["carriers"]:
        lines.append(f"Patching {head(lh)} alone brings back "
                     f"{c['patching'][lh[0]][lh[1]]:.0%} of the clean logit difference.")
    lh = c["against"][0]
    lines.append(f"{head(lh)} pushes the other way: {c['attribution'][lh[0]][lh[1]]:+.2f}.")
    return lines


def main(argv: list[str] | None = None) -> None:
    from model import load_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=N_PROMPTS)
    parser.add_argument("--model", default="tiny-words")
    parser.add_argument("--out", type=Path, default=CARD_FILE)
    args = parser.parse_args(argv)
    c = card(load_model(args.model), args.n)
    args.out.write_text(json.dumps(c, indent=1) + "\n", encoding="utf-8")
    print("\n".join("- " + line for line in describe(c)))


if __name__ == "__main__":
    main()
