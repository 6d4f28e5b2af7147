"""One look for every figure: a compact template, the colour scales, and input checks."""

from __future__ import annotations

import html
import math
import unicodedata

import numpy as np
import plotly.graph_objects as go

COLORSCALE = "Viridis"  # attention weights: 0 is dark purple, the maximum yellow
DIVERGING = "RdBu_r"  # signed values (q and k components): blue < 0 < red
MASKED_GREY = "#cfcfcf"  # cells the model could not attend to (NaN in z)
HEAD_COLOURS = (  # one colour per head in the line view; plotly's "Dark24", first 16
    "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86",
    "#EB663B", "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE",
)
# Right margin that already fits a colour bar (thickness 14, ticks, a short title). With the
# template's 30 px, plotly draws the figure, finds the bar does not fit, and draws it again:
# a third of the cost of a heatmap on every slider move (bench/bench_load.py, issue 8).
COLORBAR_MARGIN = 100
# Tick labels push the margins too; a margin that already fits them spares the second draw.
CHAR_PX, WIDE_CHAR_PX = 7.5, 14.0  # generous widths of a 12-13 px sans-serif character
AXIS_TITLE_PX = 50  # the axis title, its standoff and the gap to the tick labels
ROWS_ARE_QUERIES = "rows = queries (attending), columns = keys (attended to); softmax over keys"

# Kept small on purpose: plotly's default template adds ~8 KB to every figure's JSON.
TEMPLATE = go.layout.Template(layout=dict(
    font=dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13, color="#222"),
    paper_bgcolor="white", plot_bgcolor="white", colorway=list(HEAD_COLOURS),
    margin=dict(l=70, r=30, t=80, b=60), hoverlabel=dict(namelength=-1),
    xaxis=dict(showgrid=False, zeroline=False, ticks=""),
    yaxis=dict(showgrid=False, zeroline=False, ticks=""),
))


def to_numpy(x, name: str, ndim: int, dtype=np.float32) -> np.ndarray:
    """A numpy array of `ndim` dimensions, from numpy, torch or nested lists."""
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch here
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from exc
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(arr.shape)}")
    return arr


def check_tokens(tokens, name: str) -> list[str]:
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"{name} must be a list of strings (one per position)")
    return list(tokens)


def label_px(label: str) -> float:
    """A generous estimate of a tick label's width in pixels (wide East Asian characters and
    emoji count double). Plotly widens the margin itself if this falls short."""
    return sum(WIDE_CHAR_PX if unicodedata.east_asian_width(c) in "WF" else CHAR_PX
               for c in label)


def label_margins(y_labels, x_labels, x_angle: float = 60, show_y: bool = True,
                  show_x: bool = True) -> dict:
    """Left and bottom margins (px) that fit the y tick labels and the x tick labels rotated
    by `x_angle` degrees, plus the axis titles."""
    longest_y = max(map(label_px, y_labels), default=0) if show_y else 0
    longest_x = max(map(label_px, x_labels), default=0) if show_x else 0
    drop = longest_x * math.sin(math.radians(abs(x_angle))) + (16 if show_x else 0)
    return dict(l=int(AXIS_TITLE_PX + longest_y), b=int(AXIS_TITLE_PX + drop))


def figure_height(n_rows: int, per_row: float = 18, low: int = 420, high: int = 860) -> int:
    return int(min(high, max(low, 160 + per_row * n_rows)))


def escape(text) -> str:
    """Text for a figure title or label: plotly renders a little HTML, so user text is escaped."""
    return html.escape(str(text), quote=False)


def titled_layout(fig: go.Figure, title: str, subtitle: str = "", height: int = 420,
                  margin: dict | None = None, **rest) -> go.Figure:
    """The shared look with an escaped title and subtitle, a height and margins."""
    fig.update_layout(template=TEMPLATE, height=height,
                      title=dict(text=escape(title), subtitle=dict(text=escape(subtitle))),
                      margin=margin or dict(l=70, r=30, t=90, b=90), **rest)
    return fig
