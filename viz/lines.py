"""bertviz's "head view": tokens in two columns, a line from each query to each key it attends to.

Left column = queries, right column = keys; a line's opacity is the attention weight and its
colour is the head. Readable only for short inputs, so it refuses more than LINE_MAX_TOKENS.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import axis_labels
from .style import HEAD_COLOURS, TEMPLATE, TEMPLATE_TOP, subtitle_block, to_numpy

LINE_MAX_TOKENS = 60
MIN_WEIGHT = 0.02  # lines fainter than this are not drawn (they would be invisible anyway)
N_OPACITY_BINS = 10  # one trace per (head, opacity step) instead of one per line
LEFT, RIGHT = 0.0, 1.0


def _line_traces(weights: np.ndarray, head: int, colour: str) -> list[go.Scatter]:
    """Lines for one head, grouped into N_OPACITY_BINS traces of equal opacity."""
    traces = []
    bins = np.minimum((weights * N_OPACITY_BINS).astype(int), N_OPACITY_BINS - 1)
    for b in range(N_OPACITY_BINS):
        q_idx, k_idx = np.nonzero((bins == b) & (weights >= MIN_WEIGHT))
        if q_idx.size == 0:
            continue
        xs = np.tile([LEFT, RIGHT, np.nan], q_idx.size)
        ys = np.stack([q_idx, k_idx, np.full(q_idx.size, np.nan)], axis=1).reshape(-1)
        traces.append(go.Scatter(
            x=xs, y=ys, mode="lines", line=dict(color=colour, width=2),
            opacity=(b + 1) / N_OPACITY_BINS, hoverinfo="skip",
            name=f"head {head}", legendgroup=f"head {head}", showlegend=not traces,
        ))
    return traces


def _top_keys(weights: np.ndarray, labels: list[str], heads: list[int], top: int = 3) -> list:
    """Hover text for each query: its strongest keys in every selected head."""
    out = []
    for q in range(weights.shape[1]):
        parts = [f"query {labels[q]}"]
        for h in heads:
            best = np.argsort(-weights[h, q], kind="stable")[:top]
            parts.append(f"head {h}: " + ", ".join(
                f"{labels[k]} {weights[h, q, k]:.2f}" for k in best))
        out.append("<br>".join(parts))
    return out


def head_lines(matrix_per_head, tokens, heads_selected, title: str = "Token lines") -> go.Figure:
    """One layer's heads as lines between two columns of tokens (left = queries, right = keys).

    matrix_per_head: [head, pos, pos] (rows = queries). heads_selected: the heads to draw, each
    in its own colour; an empty selection draws only the tokens. Lines below MIN_WEIGHT are
    left out; opacity is the weight, rounded up to steps of 1/N_OPACITY_BINS.
    Raises ValueError above LINE_MAX_TOKENS tokens.
    """
    w = to_numpy(matrix_per_head, "matrix_per_head", ndim=3)
    labels = axis_labels(tokens)
    n_heads, n_q, n_k = w.shape
    if n_q != n_k or n_q != len(labels):
        raise ValueError(f"matrix_per_head must be [head, len(tokens), len(tokens)] = "
                         f"[head, {len(labels)}, {len(labels)}], got {list(w.shape)}")
    if len(labels) > LINE_MAX_TOKENS:
        raise ValueError(f"the line view draws at most {LINE_MAX_TOKENS} tokens, got "
                         f"{len(labels)}; use the heatmap for longer inputs")
    heads = [int(h) for h in heads_selected]
    bad = [h for h in heads if not 0 <= h < n_heads]
    if bad:
        raise ValueError(f"heads_selected must lie in [0, {n_heads}), got {bad}")

    traces = []
    for h in dict.fromkeys(heads):  # keep order, drop repeats
        traces += _line_traces(np.nan_to_num(w[h]), h, HEAD_COLOURS[h % len(HEAD_COLOURS)])
    positions = np.arange(len(labels))
    hover = _top_keys(np.nan_to_num(w), labels, heads)
    traces.append(go.Scatter(
        x=np.full(len(labels), LEFT), y=positions, mode="markers+text", text=labels,
        textposition="middle left", hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
        marker=dict(size=6, color="#555"), showlegend=False, name="queries",
    ))
    traces.append(go.Scatter(
        x=np.full(len(labels), RIGHT), y=positions, mode="markers+text", text=labels,
        textposition="middle right", hovertemplate="key %{text}<extra></extra>",
        marker=dict(size=6, color="#555"), showlegend=False, name="keys",
    ))
    fig = go.Figure(traces)
    sub, top = subtitle_block("left = queries, right = keys; line opacity = attention weight, "
                              "colour = head")
    fig.update_layout(
        template=TEMPLATE, hovermode="closest",
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=sub)),
        margin=dict(t=top), height=int(160 + 22 * len(labels)) + top - TEMPLATE_TOP,
        legend=dict(orientation="h", y=-0.02),
        xaxis=dict(visible=False, range=[-0.9, 1.9], fixedrange=True),
        yaxis=dict(visible=False, autorange="reversed", fixedrange=True),
        annotations=[
            dict(x=LEFT, y=1.0, yref="paper", yanchor="bottom", text="<b>queries</b>",
                 showarrow=False, xanchor="right"),
            dict(x=RIGHT, y=1.0, yref="paper", yanchor="bottom", text="<b>keys</b>",
                 showarrow=False, xanchor="left"),
        ],
    )
    if not heads:
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                           text="choose at least one head to draw its lines")
    return fig


LINES_PER_QUERY = 24  # at most this many lines from one query in one head (its strongest)


def line_data(matrix_per_head, tokens, heads_selected, min_weight: float = MIN_WEIGHT,
              per_query: int = LINES_PER_QUERY) -> dict:
    """The line view at any length, as plain data for a browser component (app_pages/attention/token_lines.py).

    Returns {"tokens": ["0·[CLS]", ...], "lines": [[query, key, weight, head], ...],
    "colours": {head: colour}}: tokens as plain text (position first, whitespace and invisible
    characters made visible, NOT escaped: the component sets them as text, never as HTML),
    and for each selected head and query its strongest keys at or above `min_weight`, at most
    `per_query` of them, weights rounded to 3 decimals. Raises ValueError on a shape that
    does not match the tokens or a head out of range."""
    w = to_numpy(matrix_per_head, "matrix_per_head", ndim=3)
    labels = axis_labels(tokens)
    n_heads, n_q, n_k = w.shape
    if n_q != n_k or n_q != len(labels):
        raise ValueError(f"matrix_per_head must be [head, len(tokens), len(tokens)] = "
                         f"[head, {len(labels)}, {len(labels)}], got {list(w.shape)}")
    heads = list(dict.fromkeys(int(h) for h in heads_selected))
    bad = [h for h in heads if not 0 <= h < n_heads]
    if bad:
        raise ValueError(f"heads_selected must lie in [0, {n_heads}), got {bad}")
    lines = []
    for h in heads:
        weights = np.nan_to_num(w[h])
        strongest = np.argsort(-weights, axis=1, kind="stable")[:, :per_query]  # [q, rank]
        kept = np.take_along_axis(weights, strongest, axis=1)  # [q, rank], descending
        q_idx, rank = np.nonzero(kept >= min_weight)
        lines += [[int(q), int(k), round(float(v), 3), h] for q, k, v in
                  zip(q_idx, strongest[q_idx, rank], kept[q_idx, rank])]
    return {"tokens": [html.unescape(label) for label in labels], "lines": lines,
            "colours": {str(h): HEAD_COLOURS[h % len(HEAD_COLOURS)] for h in heads}}
