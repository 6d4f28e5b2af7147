"""bertviz's "neuron view": where one row of an attention pattern comes from.

Left: the query vector (top) and every key vector (one row per key) as a small heatmap.
Then, per key, three bar charts: q·k, the scaled score q·k / sqrt(d_head) with masked keys
marked, and the softmax over keys (the heatmap row).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .labels import axis_labels
from .style import (COLORBAR_MARGIN, COLORSCALE, DIVERGING, TEMPLATE, label_margins,
                    subtitle_block, to_numpy)

TICK_LABEL_LIMIT = 150
Q_ROW_PX, TITLE_GAP_PX = 26, 48  # the query vector's row; room for a 2-line title
REQUIRED = ("q", "keys", "qk", "scaled", "softmax", "masked")


def _check(breakdown: dict, n_tokens: int) -> dict:
    missing = [k for k in REQUIRED if k not in breakdown]
    if missing:
        raise ValueError(f"breakdown lacks {missing}; build it with analysis.qk.qk_breakdown")
    out = {"q": to_numpy(breakdown["q"], "q", 1), "keys": to_numpy(breakdown["keys"], "keys", 2)}
    for name in ("qk", "scaled", "softmax"):
        out[name] = to_numpy(breakdown[name], name, 1)
    out["masked"] = to_numpy(breakdown["masked"], "masked", 1, dtype=bool)
    n_keys, d_head = out["keys"].shape
    if out["q"].shape != (d_head,):
        raise ValueError(f"q must be [d_head] = [{d_head}], got {list(out['q'].shape)}")
    for name in ("qk", "scaled", "softmax", "masked"):
        if out[name].shape != (n_keys,):
            raise ValueError(f"{name} must be [k_pos] = [{n_keys}], got {list(out[name].shape)}")
    if n_keys != n_tokens:
        raise ValueError(f"the breakdown has {n_keys} keys but {n_tokens} tokens were given")
    return out


def _shared(breakdown: dict) -> str:
    """" (keys from k/v head 1)" when grouped-query attention shares one key head."""
    head, kv_head = breakdown.get("head"), breakdown.get("kv_head")
    return f" (keys from k/v head {kv_head})" if kv_head not in (None, head) else ""


def qk_figure(breakdown: dict, tokens) -> go.Figure:
    """q, K, q·k, scaled score and softmax for one query, from `analysis.qk.qk_breakdown`.

    tokens: one string per key position (raw tokens or `axis_labels` output).
    """
    labels = axis_labels(tokens)
    b = _check(breakdown, len(labels))
    query_pos = int(breakdown.get("query_pos", 0))
    if not 0 <= query_pos < len(labels):
        raise ValueError(f"query_pos must be in [0, {len(labels)}), got {query_pos}")
    d_head = b["q"].size
    masked = b["masked"]
    scaled = np.where(masked, np.nan, b["scaled"])  # -inf cannot be drawn; marked instead
    limit = float(max(np.abs(b["q"]).max(), np.abs(b["keys"]).max(), 1e-6))
    n_keys = len(labels)

    # Laid out in pixels: the q row, a gap that holds the titles of K and of the bars, then
    # one row per key. Each subplot's title sits above it, never on the rows of another.
    scale = float(breakdown.get("scale", d_head ** -0.5))
    # most models divide by √d_head; Gemma 2 and 3 and GPT-Neo use a scale of their own
    how = f"÷ √{d_head}" if abs(scale - d_head ** -0.5) < 1e-9 else f"× {scale:.4g}"
    sub, top = subtitle_block(f"q·k for every key{_shared(breakdown)}, {how}; "
                              "masked keys → −∞; softmax over keys")
    q_px, gap_px, k_px = Q_ROW_PX, TITLE_GAP_PX, int(min(900, max(260, 22 * n_keys)))
    plot_px = q_px + gap_px + k_px
    fig = make_subplots(
        rows=2, cols=4, shared_yaxes=False, horizontal_spacing=0.04,
        vertical_spacing=gap_px / plot_px, row_heights=[q_px, k_px],
        column_widths=[0.34, 0.22, 0.22, 0.22],
        specs=[[{}, None, None, None], [{}, {}, {}, {}]],
        subplot_titles=["query vector q", "key vectors K<br>(a row per key)", "q·k",
                        f"{how},<br>masked", "softmax<br>over keys"],  # narrow: 2 lines
    )
    dims = list(range(d_head))
    fig.add_trace(go.Heatmap(
        z=b["q"][None], x=dims, y=[labels[query_pos]], coloraxis="coloraxis",
        hovertemplate="q[%{x}] = %{z:.3f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Heatmap(
        z=b["keys"], x=dims, y=labels, coloraxis="coloraxis",
        hovertemplate="k[%{x}] of %{y} = %{z:.3f}<extra></extra>"), row=2, col=1)
    bars = [(b["qk"], 2, "q·k", "#636EFA"), (scaled, 3, "scaled score", "#EF553B"),
            (b["softmax"], 4, "softmax", None)]
    for values, col, name, colour in bars:
        marker = dict(color=colour) if colour else dict(
            color=b["softmax"], colorscale=COLORSCALE, cmin=0, cmax=1)
        fig.add_trace(go.Bar(
            x=values, y=labels, orientation="h", name=name, marker=marker, showlegend=False,
            hovertemplate=f"key %{{y}}: {name} %{{x:.3f}}<extra></extra>"), row=2, col=col)
    if masked.any():
        fig.add_trace(go.Scatter(
            x=np.zeros(int(masked.sum())), y=[labels[i] for i in np.flatnonzero(masked)],
            mode="markers", marker=dict(symbol="x", color="#777", size=9), showlegend=False,
            name="masked",
            hovertemplate="key %{y}: masked, score −∞ → weight 0<extra></extra>",
        ), row=2, col=3)

    hide = n_keys > TICK_LABEL_LIMIT
    for col in range(1, 5):
        fig.update_yaxes(row=2, col=col, type="category", autorange="reversed",
                         categoryorder="array", categoryarray=labels,
                         showticklabels=(col == 1 and not hide), matches="y2" if col > 1 else None)
    fig.update_xaxes(row=2, col=4, range=[0, 1.02])
    fig.update_xaxes(row=1, col=1, showticklabels=False)
    layer, head = breakdown.get("layer"), breakdown.get("head")
    where = f"layer {layer}, head {head}" if layer is not None else "one head"
    fig.update_annotations(font_size=13)  # the subplot titles
    fig.update_layout(
        template=TEMPLATE, bargap=0.15, plot_bgcolor="white",
        coloraxis=dict(colorscale=DIVERGING, cmin=-limit, cmax=limit,
                       colorbar=dict(title=dict(text="value"), thickness=12)),
        title=dict(text=f"Where the row of query {labels[query_pos]} comes from ({where})",
                   subtitle=dict(text=sub)),
        height=top + TITLE_GAP_PX + plot_px + 40,
        margin=dict(t=top + TITLE_GAP_PX, b=40, r=COLORBAR_MARGIN,
                    l=label_margins(labels + [labels[query_pos]], [], show_x=False)["l"]),
    )
    return fig
