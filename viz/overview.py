"""Every layer × head at a glance, sent to the browser as one small PNG.

bertviz's model view draws every head as SVG lines and reaches 866 MB of HTML at 512 tokens.
Here each head becomes a thumbnail of at most MAX_TILE × MAX_TILE pixels, the thumbnails are
tiled into one palette PNG (one byte per pixel before compression), and a transparent scatter
with one point per (layer, head) on top carries hover text and the click.
"""

from __future__ import annotations

import base64
import html
import math
import struct
import zlib

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale, unlabel_rgb

from .style import COLORBAR_MARGIN, COLORSCALE, TEMPLATE, TEMPLATE_TOP, subtitle_block, to_numpy

MAX_TILE = 64  # a head's thumbnail is at most this many pixels on a side
MIN_TILE = 32  # short inputs are enlarged (nearest neighbour) to at least this many pixels
MAX_IMAGE_SIDE = 1400  # deep / wide models get smaller tiles so the PNG stays bounded
GAP = 2  # white pixels between thumbnails
N_LEVELS = 255  # palette entries 0..254 are Viridis, 255 is the white gap

_PALETTE = bytes(
    int(round(c)) for colour in sample_colorscale(COLORSCALE, np.linspace(0, 1, N_LEVELS))
    for c in unlabel_rgb(colour)
) + b"\xff\xff\xff"


def _png(indexed: np.ndarray, palette: bytes = _PALETTE) -> bytes:
    """Encode a uint8 [height, width] array of palette indices as an 8-bit palette PNG."""
    height, width = indexed.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = np.hstack([np.zeros((height, 1), np.uint8), indexed.astype(np.uint8)])  # filter 0
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0))
            + chunk(b"PLTE", palette)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + chunk(b"IEND", b""))


def block_max(matrix: np.ndarray, size: int) -> np.ndarray:
    """Downsample [..., n, n] to [..., size, size] by the maximum of each block.

    Block-max (not block-mean) keeps a one-token-wide pattern, like "attend to the previous
    token", visible in a thumbnail; a mean over an 8×8 block would dilute it eightfold.
    Blocks are as equal as n allows (np.linspace edges). NaN cells are ignored (np.fmax); a
    block that is all NaN stays NaN.
    """
    n = matrix.shape[-1]
    if size >= n:
        return matrix
    edges = np.linspace(0, n, size + 1).astype(int)[:-1]
    rows = np.fmax.reduceat(matrix, edges, axis=-2)
    return np.fmax.reduceat(rows, edges, axis=-1)


def squeezed_note(n_pos: int, cells: int) -> str:
    """Plain words for a thumbnail of `cells` squares a side standing for `n_pos` tokens."""
    block = round(n_pos / cells)
    return (f", squeezed into {cells}×{cells} squares: each square covers "
            f"{'about ' if n_pos % cells else ''}{block}×{block} token pairs and shows the "
            "strongest of them, so thin lines stay visible")


def tile_size(n_layers: int, n_heads: int, n_pos: int) -> tuple[int, int]:
    """(cells per thumbnail side after downsampling, pixels per cell)."""
    budget = max(8, MAX_IMAGE_SIDE // max(n_layers, n_heads) - GAP)
    cells = min(n_pos, MAX_TILE, budget)
    scale = max(1, min(math.ceil(MIN_TILE / cells), budget // cells))
    return cells, scale


def head_overview(attentions, title: str = "Every layer × head") -> go.Figure:
    """All heads of all layers as one image: rows are layers, columns are heads.

    attentions: [n_layers, head, q_pos, k_pos]. Each head is downsampled to at most 64×64 by
    block-max (see `block_max`) and coloured on one absolute Viridis scale, 0 to 1, shared by
    all heads, so heads can be compared. Thumbnail rows are queries, columns keys.

    The figure has three traces: 0 the image, 1 a transparent scatter with one point per
    (layer, head) whose customdata is [layer, head] (a click in Streamlit's `on_select`
    reports it), 2 an empty trace that only draws the colour bar.
    """
    a = to_numpy(attentions, "attentions", ndim=4)
    n_layers, n_heads, n_q, n_k = a.shape
    if n_q != n_k or 0 in a.shape:
        raise ValueError(
            f"attentions must be [n_layers, head, pos, pos] with pos > 0, got {list(a.shape)}")
    cells, scale = tile_size(n_layers, n_heads, n_q)
    thumbs = np.nan_to_num(block_max(a, cells), nan=0.0)  # [layer, head, cells, cells]
    levels = np.rint(np.clip(thumbs, 0, 1) * (N_LEVELS - 1)).astype(np.uint8)
    levels = levels.repeat(scale, axis=-2).repeat(scale, axis=-1)
    side = cells * scale
    step = side + GAP
    canvas = np.full((n_layers * step - GAP, n_heads * step - GAP), N_LEVELS, np.uint8)
    for layer in range(n_layers):
        for head in range(n_heads):
            canvas[layer * step: layer * step + side, head * step: head * step + side] = \
                levels[layer, head]
    source = "data:image/png;base64," + base64.b64encode(_png(canvas)).decode("ascii")

    layer_idx, head_idx = np.divmod(np.arange(n_layers * n_heads), n_heads)
    centres = np.arange(max(n_layers, n_heads)) * step + side / 2
    strongest = thumbs.max(axis=(-2, -1)).reshape(-1)
    fig = go.Figure([
        go.Image(source=source, x0=0, y0=0, dx=1, dy=1, hoverinfo="skip", name="heads"),
        go.Scatter(
            x=centres[head_idx], y=centres[layer_idx], mode="markers", name="pick a head",
            customdata=np.stack([layer_idx, head_idx], axis=1).tolist(),  # a list, not base64
            text=[f"largest weight {w:.2f}" for w in strongest],
            marker=dict(symbol="square", size=14, color="rgba(0,0,0,0)"),
            selected=dict(marker=dict(color="rgba(255,255,255,0.45)")),
            unselected=dict(marker=dict(opacity=0)),
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>%{text}"
                          "<br>click to open<extra></extra>",
            showlegend=False,
        ),
        go.Scatter(
            x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False,
            marker=dict(colorscale=COLORSCALE, cmin=0, cmax=1, color=[0], showscale=True,
                        colorbar=dict(title=dict(text="weight"), thickness=14)),
        ),
    ])
    height_px, width_px = canvas.shape
    shrink = min(1.0, 900 / width_px)
    plot_h = int(min(1400, max(320, height_px * shrink + 160))) - TEMPLATE_TOP - 76
    # as wide as the grid drawn at that height: the colour bar sits right beside it (a figure
    # wider than the page is narrowed by Streamlit, shown with width="content")
    width = int(72 + COLORBAR_MARGIN + plot_h * width_px / height_px)
    sub, top = subtitle_block(
        f"{n_layers} layers × {n_heads} heads; each thumbnail: rows = queries, columns = keys, "
        f"{n_q} tokens" + (squeezed_note(n_q, cells) if cells < n_q else ""), figure_px=width)
    fig.update_layout(
        template=TEMPLATE, margin=dict(l=72, r=COLORBAR_MARGIN, t=top, b=76),  # fits the labels
        clickmode="event+select", width=width,
        hovermode="closest", hoverdistance=-1, dragmode=False,
        title=dict(text=html.escape(title, quote=False), subtitle=dict(text=sub)),
        height=plot_h + top + 76,
        xaxis=dict(title=dict(text="head"), tickvals=centres[:n_heads].tolist(),
                   ticktext=[str(h) for h in range(n_heads)], range=[-GAP, width_px + GAP],
                   showgrid=False, zeroline=False, constrain="domain"),
        yaxis=dict(title=dict(text="layer"), tickvals=centres[:n_layers].tolist(),
                   ticktext=[str(lay) for lay in range(n_layers)],
                   range=[height_px + GAP, -GAP], scaleanchor="x", showgrid=False,
                   zeroline=False, constrain="domain"),
    )
    return fig
