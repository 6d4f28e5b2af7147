"""Attention figures: one matrix as a heatmap; every head, the line view and Q·K re-exported.

Rows are queries (the token doing the looking), columns are keys (the tokens looked at),
and every row is a softmax over keys.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .labels import axis_labels
from .heatmap_fit import tick_margins, tick_text
from .lines import LINE_MAX_TOKENS, head_lines
from .overview import head_overview
from .qk import qk_figure
from .style import (COLORBAR_MARGIN, COLORSCALE, MASKED_GREY, ROWS_ARE_QUERIES, TEMPLATE,
                    heatmap_size, keep_apart, label_margins, subtitle_block, tick_step, to_numpy)

__all__ = ["LINE_MAX_TOKENS", "TICK_LABEL_LIMIT", "attention_heatmap", "head_lines",
           "head_overview", "qk_figure"]

STRETCHED_BELOW = 0.9  # a colour scale topping out below this is said to be stretched
WINDOW_TICK_GAP_PX = 14  # neighbouring labels of a zoomed map at least this far apart (13 px)
TICK_LABEL_LIMIT = 150  # above this many tokens on an axis, tick labels are hidden (hover stays)


def masked_cells(shape: tuple[int, int], causal: bool = False, masked=None) -> np.ndarray:
    """Bool [q_pos, k_pos]: True where a query could not attend to a key.

    causal: keys after the query (the strict upper triangle), which needs a square matrix.
    masked: any extra bool [q_pos, k_pos] mask, e.g. padding keys.
    """
    hidden = np.zeros(shape, dtype=bool)
    if causal:
        if shape[0] != shape[1]:
            raise ValueError(f"causal=True needs a square matrix (queries = keys), got {shape}")
        hidden |= np.triu(np.ones(shape, dtype=bool), k=1)
    if masked is not None:
        extra = np.asarray(masked, dtype=bool)
        if extra.shape != shape:
            raise ValueError(f"masked must have the matrix's shape {shape}, got {extra.shape}")
        hidden |= extra
    return hidden


def attention_heatmap(matrix, q_tokens, k_tokens, title: str = "Attention",
                      causal: bool = False, masked=None, max_width: int | None = None,
                      zmax: float | None = None, window: tuple[int, int] | None = None,
                      changed=(), tick_every=None, hover_labels=None) -> go.Figure:
    """One attention matrix [q_pos, k_pos] as a heatmap (Viridis, 0 to the matrix's maximum,
    or to `zmax`, e.g. one scale shared by two maps). When that top is below 1, the subtitle
    says so ("colours stretched: yellow = 0.30"), since other figures colour 0 to 1.

    q_tokens / k_tokens: one string per row / column; raw tokens or `axis_labels` output.
    causal=True greys out the keys after each query (the model masked them before the softmax);
    `masked` adds any other bool [q_pos, k_pos] mask. Masked cells are NaN in z, drawn in grey,
    and have no hover. Hover reads "query 3·cat → key 1·the: 0.412". `title` is plain text.

    Sized to the matrix (`heatmap_size`): square cells, a plot of at least 420 px for short
    inputs, the colour bar right beside it. Show it with `st.plotly_chart(..., width="content")`.
    `max_width` caps the figure's width (e.g. for half a page). A map with a `window` is
    sized by the window (its cells as large as for a text of that many tokens).

    z is float32 (plotly sends it as a binary array). Above TICK_LABEL_LIMIT tokens the tick
    labels are hidden but hover still names both tokens. `window` (first, last) opens the map
    zoomed on those positions, labelled (a double-click shows it all): every position in the
    window when the labels fit, else every other one (or fewer), always with the `changed`
    positions (e.g. where two compared texts differ).

    `tick_every` (x_step, y_step) writes every step-th label of each axis from the first, cut
    short (viz/heatmap_fit.py), at any length. `hover_labels` (q, k): what hover names instead
    (e.g. `whole_labels`, never cut), sent only when they differ from the axis labels.
    """
    z = to_numpy(matrix, "matrix", ndim=2)
    q_labels, k_labels = axis_labels(q_tokens), axis_labels(k_tokens)
    if z.shape != (len(q_labels), len(k_labels)):
        raise ValueError(
            f"matrix must be [len(q_tokens), len(k_tokens)] = [{len(q_labels)}, {len(k_labels)}]"
            f" (rows = queries, columns = keys), got {list(z.shape)}"
        )
    hidden = masked_cells(z.shape, causal, masked)
    z = z.copy()
    z[hidden] = np.nan
    finite = z[np.isfinite(z)]
    low = 0.0 if finite.size == 0 or finite.min() >= 0 else None
    top = zmax if zmax is not None else (float(finite.max()) if finite.size else None)

    fig = go.Figure(go.Heatmap(
        z=z, x=k_labels, y=q_labels, colorscale=COLORSCALE, zmin=low, zmax=zmax,
        hoverongaps=False,
        colorbar=dict(title=dict(text="weight"), thickness=14),
        hovertemplate="query %{y} → key %{x}: %{z:.3f}<extra></extra>",
    ))
    long_q, long_k = (n > TICK_LABEL_LIMIT and window is None and tick_every is None
                      for n in z.shape)
    subtitle, top = subtitle_block(_subtitle(hidden.any(), causal, top if low == 0 else None, zmax,
                                             window, len(q_labels)))
    # a zoomed map is sized by its window: its cells and margins fit the labels it shows
    sized_q, sized_k = ((q_labels, k_labels) if not window else
                        (q_labels[window[0]:window[1] + 1], k_labels[window[0]:window[1] + 1]))
    margin = dict(r=COLORBAR_MARGIN, t=top, pad=0,  # pad: no grey frame round the cells
                  **(label_margins(sized_q, sized_k, 60, not long_q, not long_k)
                     if tick_every is None else tick_margins(q_labels, k_labels)))
    fig.update_layout(
        template=TEMPLATE, plot_bgcolor=MASKED_GREY, margin=margin,
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=subtitle)),
        **heatmap_size(len(sized_q), len(sized_k), margin, max_width),
        xaxis=dict(title=dict(text="key (attended to)" + (", hover for tokens" if long_k else "")),
                   showticklabels=not long_k, tickangle=-60, type="category"),
        yaxis=dict(title=dict(text="query (attending)" + (", hover for tokens" if long_q else "")),
                   showticklabels=not long_q, autorange="reversed", type="category"),
    )
    if causal and hidden.any():
        fig.add_annotation(text="masked (causal)", xref="x domain", yref="y domain", x=0.98,
                           y=0.98, xanchor="right", yanchor="top", showarrow=False,
                           font=dict(color="#444"), bgcolor="rgba(255,255,255,0.6)")
    if window:
        _zoom(fig, window, margin, q_labels, k_labels, changed)
    _label(fig, q_labels, k_labels, tick_every, hover_labels)
    return fig


def _subtitle(masked: bool, causal: bool, top, zmax, window, n: int) -> str:
    """What the map's subtitle says: the axes, grey cells, a stretched scale (`top`: the
    colour scale's top when it starts at 0, else None), a zoom."""
    subtitle = ROWS_ARE_QUERIES
    if masked:
        subtitle += "; grey = masked (causal)" if causal else "; grey = masked"
    if top is not None and 0 < top < STRETCHED_BELOW:
        subtitle += (f"; colours stretched: yellow = {top:.2f}"
                     + (" (largest weight)" if zmax is None else "") + ", not 1")
    if window:
        subtitle += f"; zoomed on tokens {window[0]}–{window[1]} (double-click to see all {n})"
    return subtitle


def _label(fig: go.Figure, q_labels, k_labels, tick_every, hover_labels) -> None:
    """Every step-th tick label, cut short (`tick_every`); hover from `hover_labels` where
    they differ from the axis labels."""
    if tick_every is not None:
        for axis, labels, step in (("xaxis", k_labels, tick_every[0]),
                                   ("yaxis", q_labels, tick_every[1])):
            shown = labels[::max(1, int(step))]
            fig.update_layout({axis: dict(tickmode="array", tickvals=shown,
                                          ticktext=[tick_text(t) for t in shown])})
    if hover_labels is not None and (list(hover_labels[0]) != q_labels
                                     or list(hover_labels[1]) != k_labels):
        fig.update_traces(hovertext=[[f"query {q} → key {k}" for k in hover_labels[1]]
                                     for q in hover_labels[0]],
                          hovertemplate="%{hovertext}: %{z:.3f}<extra></extra>")


def _zoom(fig: go.Figure, window, margin: dict, q_labels, k_labels, changed) -> None:
    """Open the map on `window`, with its positions labelled (`window_ticks`)."""
    first, last = window[0] - 0.5, window[1] + 0.5
    plot_px = min(fig.layout.width - margin["l"] - margin["r"],
                  fig.layout.height - margin["t"] - margin["b"])
    x_ticks = window_ticks(window, plot_px, changed, 60, len(k_labels))
    y_ticks = window_ticks(window, plot_px, changed, 90, len(q_labels))
    fig.update_layout(xaxis=dict(range=[first, last], autorange=False, tickmode="array",
                                 tickvals=[k_labels[i] for i in x_ticks],
                                 ticktext=[k_labels[i] for i in x_ticks]),
                      yaxis=dict(range=[last, first], autorange=False, tickmode="array",
                                 tickvals=[q_labels[i] for i in y_ticks],
                                 ticktext=[q_labels[i] for i in y_ticks]))


def window_ticks(window: tuple[int, int], plot_px: float, changed=(), angle: float = 90,
                 n: int | None = None) -> list[int]:
    """The positions to label in a zoomed map showing `window` (first, last) on a plot
    `plot_px` across: all of them when labels at `angle` degrees from the axis stay
    WINDOW_TICK_GAP_PX apart, else every step-th, always with the `changed` positions in the
    window (neighbours too close to one are left out)."""
    first, last = window
    last = last if n is None else min(last, n - 1)
    step = tick_step(plot_px / max(1, last - first + 1), WINDOW_TICK_GAP_PX, angle)
    return keep_apart([int(c) for c in changed if first <= int(c) <= last]
                      + list(range(first, last + 1, step)), step)


def cross_attention_heatmap(matrix, decoder_tokens, output_tokens, source_tokens,
                            title: str = "Cross-attention", max_width: int | None = None
                            ) -> go.Figure:
    """One cross-attention matrix [out_pos, src_pos] of an encoder-decoder.

    Row t is the decoder step that reads decoder_tokens[t] and writes output_tokens[t]; its
    label says both ("^→x"). Columns are the source tokens. Each row sums to 1 over the source.
    """
    z = to_numpy(matrix, "matrix", ndim=2)
    if len(decoder_tokens) != len(output_tokens):
        raise ValueError("decoder_tokens and output_tokens must have one entry per row")
    rows = [f"{read}→{wrote}" for read, wrote in zip(decoder_tokens, output_tokens)]
    fig = attention_heatmap(z, rows, list(source_tokens), title=title, max_width=max_width)
    fig.update_layout(
        xaxis_title_text="source token (encoder, key)",
        yaxis_title_text="decoder step: reads → writes (query)",
    )
    return fig
