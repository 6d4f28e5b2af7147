"""What the effect page says about integrated gradients: the names of the baselines, what the
baseline and the steps can and cannot do, the line that sets the scores' sum beside the change
in the target, and the warning when that sum misses more than 5% of the change.

Plain strings and functions of a run's numbers (no Streamlit), so the page only places them
and a test can read every sentence. Token names go through `md_escape`: GPT-2's padding token
is written <|endoftext|>, which Markdown would otherwise eat.
"""

from __future__ import annotations

import math

from analysis.effect import MAX_OCCLUSION_TOKENS
from analysis.effect_target import special_token_id
from analysis.gradients import (
    GAP_WARN_SHARE, MAX_GRADIENT_TOKENS, MAX_IG_BATCH_TOKENS, MAX_IG_STEPS, IGResult,
    default_baseline, zero_start_is_empty,
)
from ui.text import md_escape
from viz.numbers import percent, plain

# The six measures: their names in the strip's rows, and what each measures, in words.
NAMES = {"attention": "Attention", "rollout": "Rollout", "attention_norm": "Attn × value",
         "gradient_x_input": "Grad × input", "integrated_gradients": "Integ. grads",
         "occlusion": "Occlusion"}
MEANINGS = {
    "attention": "the chosen head's (or the heads' average) attention from the target's row",
    "rollout": "attention followed through every layer (heads averaged, residual added)",
    "attention_norm": "attention times the size of what the token passes on, "
                      "‖weight · value · W_O‖",
    "gradient_x_input": "how fast the target changes with the token's embedding, times "
                        "that embedding",
    "integrated_gradients": "the same, added up along the way from the baseline to your text",
    "occlusion": "the target with the token minus the target without it"}
OCCLUSION = {"remove": "remove the token", "pad": "replace it by [PAD]",
             "mask": "replace it by [MASK]"}
WARNING = (
    "**Attention is not explanation.** A head can put most of its attention on a token whose "
    "value vector is tiny, so almost nothing of that token reaches the output. Attention shows "
    "where a head *looks*; gradients, integrated gradients and occlusion measure what "
    "*changes the answer*. Where they disagree, trust those, not the heatmap.")
RHO_SCALE = "from −1 to 1, 1 means the two orders match"  # Spearman ρ in plain words
AGREEMENT = (
    "ρ on the right: near +1, the method ranks the tokens as this attention does; near 0 or "
    "below, the tokens the head looks at are not the ones that change the target, so its "
    "attention alone would mislead you. (Ranked by size: a token that pushes the target down "
    "matters too.)")
NO_OCCLUSION = ("This view compares every head with occlusion, which runs only for texts of up "
                f"to {MAX_OCCLUSION_TOKENS} tokens.")



def offered(loaded, choices: dict) -> list[str]:
    """The choices this tokenizer has: [PAD] / [MASK] only where it has that token."""
    out = []
    for name in choices:
        try:
            if name in ("pad", "mask"):
                special_token_id(loaded, name)
            out.append(name)
        except ValueError:
            pass
    return out


def limits(k: int, most_steps: int, context_cut: int | None = None) -> str:
    """The methods' limits, for a text the target sees `k` tokens of (at most `most_steps`
    steps of integrated gradients fit). `context_cut`: the model's context when it cut the
    text (the sidebar's banner says so), else None."""
    return (f"Limits, so the page stays quick: gradients for up to {MAX_GRADIENT_TOKENS} "
            f"tokens; integrated gradients up to {MAX_IG_STEPS} steps and "
            f"{MAX_IG_BATCH_TOKENS:,} token-steps (steps × tokens: here at most "
            f"{most_steps} steps for {k} tokens); "
            f"occlusion up to {MAX_OCCLUSION_TOKENS} tokens (one run per token). "
            "Past a limit, the method is skipped and the page says so; "
            + ("these limits never shorten your text." if context_cut is None else
               f"these limits never shorten your text (the model itself reads at most "
               f"{context_cut:,} tokens: see above)."))


BASELINE_LABEL = "Integrated gradients start from"
BASELINE_ALONE = "Integrated gradients start from {}."  # "{}": the one baseline's name

BASELINE_HELP = (
    "The baseline is where the path starts: your text with every token replaced by the "
    "padding token (the default), by zero vectors, or by [MASK]. Integrated gradients add up "
    "how the target changes along the straight path from there to your text, so each token's "
    "score is its share of that change, and the scores add up to it.\n\n"
    "The padding token is a token the model knows, so every point of the path is an ordinary "
    "input. Zero vectors are the textbook choice, but a model that adds nothing to its token "
    "vectors before normalising them (Llama, Mistral, Gemma, Qwen: their positions act inside "
    "attention) is then given nothing at all: the target leaps within a tiny stretch at the "
    "start of the path, and the scores stop adding up, however many steps you take.")

STEPS_HELP = (
    "Points along the path, run a few at a time. More steps follow the path more finely: they "
    "shrink a gap that comes from the target bending along the way, at the cost of time. "
    "They cannot fix a start the model cannot read (zero vectors in a model like Llama: start "
    "from the padding token instead), and they do not make the scores more right: another "
    "baseline gives other scores that add up just as well.")

WARN_PERCENT = f"{100 * GAP_WARN_SHARE:.0f}%"


def baseline_names(loaded) -> dict[str, str]:
    """Each baseline's name as the page shows it (Markdown, escaped): the padding token is
    named as this tokenizer writes it, e.g. "padding tokens ([PAD])"."""
    names = {"pad": "padding tokens", "zero": "zero vectors", "mask": "[MASK] tokens"}
    try:
        pad = loaded.tokenizer.decode([special_token_id(loaded, "pad")]).strip()
    except ValueError:  # no padding token: the page will not offer it
        return {k: md_escape(v) for k, v in names.items()}
    if pad:
        names["pad"] += f" ({pad})"
    return {k: md_escape(v) for k, v in names.items()}


def gap_line(ig: IGResult, names: dict[str, str]) -> str:
    """The caption under the strip: steps, start, the sum beside the change, and the gap as a
    share of the change."""
    head = (f"Integrated gradients: {ig.steps} steps from {names[ig.baseline]}. "
            f"The scores add up to {ig.attributions.sum():+.4f}; the target moved by "
            f"{ig.change:+.4f} from that start to your text")
    share = ig.gap_share
    if math.isnan(share):
        return head + (f" (gap {plain(abs(ig.gap))}: the target did not move, so there is "
                       "nothing to share out).")
    return head + f" (gap: {percent(share)} of that change)."


def gap_warning(ig: IGResult, zero_is_empty: bool, more_steps: int | None,
                has_pad: bool = True) -> str | None:
    """None when the scores add up (within 5% of the change); otherwise what went wrong and
    what would help. zero_is_empty: `analysis.gradients.zero_start_is_empty` for this model;
    more_steps: the largest step count this text allows, when it is more than was used;
    has_pad: the tokenizer has a padding token to start from instead."""
    if ig.adds_up:
        return None
    share = ig.gap_share
    miss = (f"they miss {percent(share)} of the change in the target" if not math.isnan(share)
            else f"they add up to {ig.attributions.sum():+.4f} though the target did not move")
    text = (f"**These integrated gradients do not add up:** {miss} (more than {WARN_PERCENT}), "
            "so read their scores as rough at best.")
    if ig.baseline == "zero" and zero_is_empty:
        text += (" This model adds nothing to zero vectors before normalising them, so the "
                 "target leaps at the very start of the path. More steps will not fix that")
        return text + (": start from the padding token instead." if has_pad else
                       ", and this tokenizer has no padding token to start from.")
    if more_steps is not None and more_steps > ig.steps:
        return text + (f" The target bends sharply along the path: try {more_steps} steps "
                       "(more time), or another baseline.")
    return text + (" The target bends sharply along the path, more than these steps can "
                   "follow: try another baseline, or a shorter text, which allows more steps.")


def ig_notes(loaded, ig: IGResult, most_steps: int | None) -> tuple[str, str | None]:
    """What the page writes under the strip: the caption (`gap_line`) and the warning
    (`gap_warning`, None when the scores add up). most_steps: the largest step count this
    text allows (the page's step choices within the bounds), None if unknown."""
    names = baseline_names(loaded)
    warning = None
    if not ig.adds_up:
        empty = ig.baseline == "zero" and zero_start_is_empty(loaded)
        has_pad = default_baseline(loaded) == "pad"
        warning = gap_warning(ig, empty, most_steps, has_pad)
    return gap_line(ig, names), warning
