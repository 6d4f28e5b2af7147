"""Figures for step-by-step generation: one step's next-token distribution (the top tokens, the
chosen one marked, the probability that top-k and top-p cut away) and the attention row of the
token the model read last. Pure plotly: lists and arrays in, a Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .labels import SEPARATOR, looks_byte_level, token_label
from .numbers import percent
from .style import check_tokens, label_px, titled_layout, to_numpy

KEPT, CUT, CHOSEN, MASS = "#4C78A8", "#C9C9C9", "#F58518", "#9D755D"
PROMPT_BAR, NEW_BAR = "#4C78A8", "#F58518"
TICKS_UP_TO = 64  # attention rows longer than this show no tick labels (hover names each bar)


def share(p: float) -> str:
    """A probability as a percentage a newcomer can read: "61%", "3.1%", "0.07%", "< 0.01%"
    (so a small cut is not shown as nothing), exactly 0 as "0%"; never "7.3e-04"."""
    return percent(p)


def _bar_labels(tokens: list[str], kept: list[bool], chosen: int | None) -> list[str]:
    byte_level = looks_byte_level(tokens)
    return [f"{i + 1}. {token_label(t, byte_level)}" + ("  ◀ chosen" if i == chosen else "")
            + ("" if kept[i] else " (cut)") for i, t in enumerate(tokens)]


def next_token_figure(tokens, probs, kept, chosen: int | None, cut_top_k: float | None,
                      cut_top_p: float | None, title: str, subtitle: str = "") -> go.Figure:
    """Horizontal bars, most likely token at the top: tokens [n] (raw strings), probs [n],
    kept [n] (False: top-k or top-p cut the token away, drawn grey), chosen: the index in
    `tokens` of the chosen token (None: not among them). cut_top_k / cut_top_p: the
    probability each cut removed, drawn as two more bars under a gap (None: no such rows,
    as for greedy choice)."""
    tokens = check_tokens(tokens, "tokens")
    p = to_numpy(probs, "probs", ndim=1, dtype=np.float64)
    keep = [bool(k) for k in kept]
    if not len(tokens) == p.size == len(keep):
        raise ValueError(f"tokens, probs and kept must have the same length, got "
                         f"{len(tokens)}, {p.size}, {len(keep)}")
    if chosen is not None and not 0 <= chosen < len(tokens):
        raise ValueError(f"chosen must index tokens, got {chosen}")
    labels = _bar_labels(tokens, keep, chosen)
    colours = [CHOSEN if i == chosen else (KEPT if k else CUT) for i, k in enumerate(keep)]
    notes = ["chosen" if i == chosen else ("kept" if k else "cut away")
             for i, k in enumerate(keep)]
    fig = go.Figure(go.Bar(
        y=labels, x=p, orientation="h", marker_color=colours, customdata=notes,
        text=[share(v) for v in p], textposition="outside", cliponaxis=False,
        hovertemplate="%{y}: %{x:.2%} (%{customdata})<extra></extra>", showlegend=False))
    rows = list(labels)
    if cut_top_k is not None and cut_top_p is not None:
        extra = ["cut away by top-k", "cut away by top-p"]
        fig.add_bar(y=extra, x=[cut_top_k, cut_top_p], orientation="h", marker_color=MASS,
                    marker_pattern_shape="/", text=[share(cut_top_k), share(cut_top_p)],
                    textposition="outside", cliponaxis=False, showlegend=False,
                    hovertemplate="%{y}: %{x:.2%} of the probability, over the whole "
                    "vocabulary<extra></extra>")
        rows += extra
    top = max([float(p.max()) if p.size else 0.0, cut_top_k or 0.0, cut_top_p or 0.0])
    left = int(40 + max(map(label_px, rows), default=0))
    titled_layout(fig, title, subtitle, height=int(140 + 30 * len(rows)),
                  margin=dict(l=left, r=40, b=50),
                  xaxis=dict(title=dict(text="probability"), range=[0, min(1.0, top * 1.18) or 1],
                             showgrid=True, gridcolor="#eee", tickformat=".0%"),
                  yaxis=dict(autorange="reversed", type="category"),
                  bargap=0.25, dragmode=False)
    return fig


def attention_row_figure(tokens, weights, first_position: int, n_prompt: int, title: str,
                         subtitle: str = "") -> go.Figure:
    """One query's attention over the keys it could see, as bars in text order.

    tokens: the keys' raw token strings [k]; weights: [k]; first_position: the text position
    of tokens[0] (a sliding window starts past 0); n_prompt: positions below it are the
    prompt (blue), the rest were generated (orange). The last bar is the query itself."""
    tokens = check_tokens(tokens, "tokens")
    w = to_numpy(weights, "weights", ndim=1, dtype=np.float64)
    if w.size != len(tokens) or not tokens:
        raise ValueError(f"weights must have one value per token, got {w.size} for "
                         f"{len(tokens)} tokens")
    byte_level = looks_byte_level(tokens)
    positions = list(range(first_position, first_position + len(tokens)))
    labels = [f"{p}{SEPARATOR}{token_label(t, byte_level)}" for p, t in zip(positions, tokens)]
    where = ["prompt" if p < n_prompt else "written by the model" for p in positions]
    fig = go.Figure(go.Bar(
        x=labels, y=w, marker_color=[PROMPT_BAR if p < n_prompt else NEW_BAR for p in positions],
        marker_line=dict(color=["black" if i == len(labels) - 1 else "rgba(0,0,0,0)"
                                for i in range(len(labels))], width=2),
        customdata=where, showlegend=False,
        hovertemplate="%{x} (%{customdata}): %{y:.3f}<extra></extra>"))
    show_ticks = len(labels) <= TICKS_UP_TO
    bottom = int(60 + (max(map(label_px, labels)) * 0.9 if show_ticks else 0))
    titled_layout(fig, title, subtitle, height=300 + bottom, margin=dict(l=60, r=20, b=bottom),
                  xaxis=dict(type="category", tickangle=-60, showticklabels=show_ticks,
                             title=dict(text="" if show_ticks else
                                        f"positions {positions[0]}–{positions[-1]} "
                                        "(hover a bar to see its token)")),
                  yaxis=dict(title=dict(text="attention"), range=[0, 1.02], showgrid=True,
                             gridcolor="#eee"),
                  bargap=0.15, dragmode=False)
    return fig
