"""The one figure a lesson step shows, by page: a step names it with `figure = "..."`, or gets
its page's first one. A step on a page with no figure here shows the whole page, as before.

Each page listed here offers `figure(name)` in its module (app_pages/<module>.py): it draws
that figure, and nothing else, for the view the step put in the session.
"""

from __future__ import annotations

# page -> {figure name: what it shows, in a few plain words}; the first is the default.
FIGURES: dict[str, dict[str, str]] = {
    "attention": {"heatmap": "the heatmap of the step's head",
                  "cross-attention": "the decoder's cross-attention heatmap",
                  "score-parts": "one score of the step's head taken apart into its parts",
                  "place-grid": "every head, coloured by how much of its pattern is place"},
    "effect": {"strip": "how much each token matters, six ways, beside the step's head",
               "heads": "every head's attention against the effect of removing each token"},
    "heads": {"grid": "one number per head, every head at once"},
    "compare": {"pair": "the step's head on the two texts, side by side",
                "difference": "where the two texts' attention differs, B minus A"},
    "ablation": {"importance": "every head's effect when it is removed alone"},
    "logit-lens": {"table": "each layer's top guess at the positions up to the step's"},
    "generate": {"next": "the text so far and the likeliest next tokens at the step",
                 "attention": "the text so far and where its newest token looked"},
    "walkthrough": {"step": "the step of the forward pass: its tensors and its figure"},
    "positions": {"distance": "how alike positions are, against their distance",
                  "similarity": "position × position similarity of the model's own"},
    "embeddings": {"projection": "the tokens as points, after the step's layer",
                   "parts": "one token's embedding parts and their sum, number by number",
                   "lengths": "how long each part of the embedding is, token by token"},
    "training": {"run": "a training run of the step's task, with its live figures"},
    "attribution": {"parts": "the score, built part by part (embeddings, layers, norm)",
                    "heads": "each head's direct part of the score"},
    "patching": {"heads": "how much of the answer each head brings back",
                 "stream": "how much each layer and position brings back"},
}


# A step's `figure = "page"`: no one figure, the whole page with its controls (for a class to
# explore, or a teacher who moves a setting while the room watches).
WHOLE_PAGE = "page"


def default_figure(page: str) -> str:
    """The figure a step on `page` shows when it names none ("" when the page has none)."""
    return next(iter(FIGURES.get(page, {})), "")


def figure_of(page: str, name: str = "") -> str:
    """The figure a step shows: its own choice, else its page's default ("" for none: the
    whole page)."""
    return "" if name == WHOLE_PAGE else name or default_figure(page)
