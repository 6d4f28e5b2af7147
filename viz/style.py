"""One look for every figure: a compact template, the colour scales, and input checks."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

COLORSCALE = "Viridis"  # attention weights: 0 is dark purple, the maximum yellow
DIVERGING = "RdBu_r"  # signed values (q and k components): blue < 0 < red
MASKED_GREY = "#cfcfcf"  # cells the model could not attend to (NaN in z)
HEAD_COLOURS = (  # one colour per head in the line view; plotly's "Dark24", first 16
    "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86",
    "#EB663B", "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE",
)
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


def figure_height(n_rows: int, per_row: float = 18, low: int = 420, high: int = 860) -> int:
    return int(min(high, max(low, 160 + per_row * n_rows)))
