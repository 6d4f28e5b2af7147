"""Figures of a training run: the loss curve, attention snapshots, and cross-attention.

Pure functions: lists and arrays in, `plotly.graph_objects.Figure` out. Rows of every
attention matrix are queries, columns are keys, each row sums to 1.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .labels import axis_labels, token_label
from .style import (COLORSCALE, FULL_PAGE_PX, MASKED_GREY, TEMPLATE, label_px, tick_step,
                    subtitle_block, to_numpy)

MAX_CURVE_POINTS = 600  # longer loss curves are averaged down to this many points
SNAPSHOT_COLUMNS = 2  # heads per row in the snapshot grid: wide enough to label every token
# One panel per head, SNAPSHOT_CELL_PX per token within [LOW, HIGH]; above SNAPSHOT_LABEL_LIMIT
# tokens the tick labels are left to the hover.
SNAPSHOT_PX_LOW, SNAPSHOT_PX_HIGH, SNAPSHOT_CELL_PX, SNAPSHOT_GAP_PX = 240, 380, 15, 40
SNAPSHOT_LABEL_LIMIT = 60


def _downsample(values: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(step numbers, values) averaged over equal windows so at most `limit` points remain."""
    steps = np.arange(1, len(values) + 1)
    if len(values) <= limit:
        return steps, values
    edges = np.linspace(0, len(values), limit + 1).astype(int)
    means = np.array([values[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])
    return edges[1:], means


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over up to `window` steps (the first points average what exists)."""
    if len(values) == 0:
        return values
    cumulative = np.cumsum(np.insert(values, 0, 0.0))
    idx = np.arange(1, len(values) + 1)
    start = np.maximum(0, idx - window)
    return (cumulative[idx] - cumulative[start]) / (idx - start)


def loss_curve(losses, evals: dict | None = None, scores: dict | None = None,
               baseline: tuple[str, float] | None = None, total_steps: int | None = None,
               title: str = "Training loss") -> go.Figure:
    """The training loss per step (faint) and its running mean (bold).

    evals: {name: (steps, values)} more losses on the same axis (e.g. held-out loss).
    scores: {name: (steps, values)} fractions in [0, 1] on a right-hand axis (e.g. the
    induction score). baseline: (label, value) a dashed horizontal line (e.g. the unigram
    loss). total_steps fixes the x range so the curve grows into it while training runs.
    """
    raw = to_numpy(losses, "losses", ndim=1, dtype=np.float64)
    fig = make_subplots(specs=[[{"secondary_y": bool(scores)}]])
    steps, shown = _downsample(raw, MAX_CURVE_POINTS)
    window = max(1, len(raw) // 50)
    fig.add_trace(go.Scatter(x=steps, y=shown, mode="lines", name="loss (each step)",
                             line=dict(color="#9ecae1", width=1),
                             hovertemplate="step %{x}: %{y:.3f}<extra></extra>"))
    smooth_steps, smoothed = _downsample(smooth(raw, window), MAX_CURVE_POINTS)
    fig.add_trace(go.Scatter(x=smooth_steps, y=smoothed, mode="lines",
                             name="loss (running mean)" if window > 1 else "loss",
                             line=dict(color="#08519c", width=2.5),
                             hovertemplate="step %{x}: %{y:.3f}<extra></extra>"))
    colours = iter(["#d62728", "#2ca02c", "#9467bd", "#ff7f0e"])
    for name, (x, y) in (evals or {}).items():
        fig.add_trace(go.Scatter(x=list(x), y=list(y), mode="lines+markers",
                                 name=html.escape(name), line=dict(color=next(colours)),
                                 hovertemplate="step %{x}: %{y:.3f}<extra></extra>"))
    for name, (x, y) in (scores or {}).items():
        fig.add_trace(go.Scatter(x=list(x), y=list(y), mode="lines+markers",
                                 name=html.escape(name) + " (right axis)",
                                 line=dict(color=next(colours), dash="dot"),
                                 hovertemplate="step %{x}: %{y:.3f}<extra></extra>"),
                      secondary_y=True)
    if baseline is not None:
        fig.add_hline(y=baseline[1], line=dict(color="#555", dash="dash"),
                      annotation_text=html.escape(f"{baseline[0]}: {baseline[1]:.2f}"),
                      annotation_position="top right")
    fig.update_layout(template=TEMPLATE, title=dict(text=html.escape(title)), height=380,
                      legend=dict(orientation="h", y=-0.25), margin=dict(t=50, b=90))
    fig.update_xaxes(title_text="training step",
                     range=[0, total_steps] if total_steps else None)
    fig.update_yaxes(title_text="loss (nats/token)", rangemode="tozero", secondary_y=False)
    if scores:
        fig.update_yaxes(title_text="score", range=[0, 1.02], secondary_y=True, showgrid=False,
                         tickmode="array", tickvals=[0, 0.25, 0.5, 0.75, 1])
    return fig


def snapshot_grid(patterns, q_tokens, k_tokens, title: str, causal: bool = True,
                  row_names: list[str] | None = None) -> go.Figure:
    """Every head of one layer at one moment of training: patterns [head, q_pos, k_pos].

    One heatmap per head, all on the same 0..1 colour scale so heads can be compared and the
    same head compared across snapshots. causal=True greys the keys after each query. Every
    panel names its key tokens along the bottom, and the first panel of each row its query
    tokens, so a stripe can be read off the example (the induction head's: each query looks at
    the token after the previous copy of itself). Sized to the tokens; show it with
    width="content".
    """
    z = to_numpy(patterns, "patterns", ndim=3)
    n_heads = z.shape[0]
    q_labels, k_labels = axis_labels(q_tokens), axis_labels(k_tokens)
    if z.shape[1:] != (len(q_labels), len(k_labels)):
        raise ValueError(f"patterns must be [head, len(q_tokens), len(k_tokens)] = "
                         f"[{n_heads}, {len(q_labels)}, {len(k_labels)}], got {list(z.shape)}")
    z = z.copy()
    if causal:
        if z.shape[1] != z.shape[2]:
            raise ValueError("causal=True needs square patterns (queries = keys)")
        z[:, np.triu(np.ones(z.shape[1:], dtype=bool), k=1)] = np.nan
    cols = min(SNAPSHOT_COLUMNS, n_heads)
    rows = -(-n_heads // cols)
    n = max(z.shape[1:])
    side = int(min(SNAPSHOT_PX_HIGH, max(SNAPSHOT_PX_LOW, SNAPSHOT_CELL_PX * n)))
    long = n > SNAPSHOT_LABEL_LIMIT
    subtitle, top = subtitle_block("rows = queries, columns = keys: the example's tokens in "
                                   "order")
    margin = dict(l=int(30 + max(map(label_px, _bare(q_tokens)), default=0)), r=90, t=top + 25,
                  b=int(30 + max(map(label_px, _bare(k_tokens)), default=0)), pad=0)
    width = margin["l"] + margin["r"] + cols * side + (cols - 1) * SNAPSHOT_GAP_PX
    height = margin["t"] + margin["b"] + rows * side + (rows - 1) * (SNAPSHOT_GAP_PX + 30)
    names = row_names or [f"head {h}" for h in range(n_heads)]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[html.escape(n) for n in names],
                        horizontal_spacing=SNAPSHOT_GAP_PX / (width - margin["l"] - margin["r"]),
                        vertical_spacing=(SNAPSHOT_GAP_PX + 30) / (height - margin["t"]
                                                                  - margin["b"]))
    for h in range(n_heads):
        fig.add_trace(go.Heatmap(
            z=z[h], x=list(range(len(k_labels))), y=list(range(len(q_labels))),
            coloraxis="coloraxis", hoverongaps=False, customdata=_hover(q_labels, k_labels),
            hovertemplate=f"head {h}: %{{customdata}}: %{{z:.2f}}<extra></extra>",
        ), row=h // cols + 1, col=h % cols + 1)
    # Streamlit narrows a figure wider than the page (an 800 px screen: FULL_PAGE_PX): label
    # every step-th key so neighbouring labels never touch there (hover names every cell)
    bare_k = _bare(k_tokens)
    shown_w = min(width, FULL_PAGE_PX) - margin["l"] - margin["r"]  # the margins keep their size
    narrow_cell = side * shown_w / (width - margin["l"] - margin["r"]) / max(len(k_labels), 1)
    step = tick_step(narrow_cell, max(map(label_px, bare_k), default=0) + 4)
    shown_k = list(range(0, len(k_labels), step))
    fig.update_xaxes(tickmode="array", tickvals=shown_k,
                     ticktext=[bare_k[i] for i in shown_k], tickangle=0, showticklabels=not long,
                     tickfont=dict(size=12), range=[-0.5, len(k_labels) - 0.5])
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(q_labels))),
                     ticktext=_bare(q_tokens), showticklabels=False, tickfont=dict(size=12),
                     range=[len(q_labels) - 0.5, -0.5])
    for row in range(1, rows + 1):  # query tokens on the first panel of each row
        fig.update_yaxes(showticklabels=not long, row=row, col=1)
    fig.update_annotations(font_size=12)  # the head titles
    fig.update_layout(
        template=TEMPLATE, plot_bgcolor=MASKED_GREY if causal else "white", width=width,
        height=height, margin=margin,
        title=dict(text=html.escape(title), subtitle=dict(text=subtitle)),
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="weight"), thickness=12)),
    )
    return fig


def _bare(tokens) -> list[str]:
    """Tick text: each token on its own, made visible and safe ("␣" for a space)."""
    return [token_label(t) for t in tokens]


def _hover(q_labels: list[str], k_labels: list[str]) -> np.ndarray:
    """[q_pos, k_pos] hover names: "query 3·k → key 1·3"."""
    return np.array([[f"query {q} → key {k}" for k in k_labels] for q in q_labels])
