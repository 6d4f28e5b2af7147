"""Figures for the effect page: a token × method strip with each method's agreement with raw
attention beside it. Pure plotly: arrays, token lists and plain-text names in, a Figure out.
(The per-head view is viz/heads.py's `head_grid`.)"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from .labels import axis_labels
from .style import (DIVERGING, FULL_PAGE_PX, MASKED_GREY, TEMPLATE, check_tokens, escape,
                    label_margins, subtitle_block, to_numpy)

ROW_PX = 34  # one method's row
MAX_TICK_LABELS = 150  # above this many tokens the x labels are left to the hover
BAR_SHARE = [0.68, 0.32]  # the ρ panel: about 90 px of a phone-width figure's plot area


def normalise_rows(values: np.ndarray) -> np.ndarray:
    """Each row divided by its largest absolute value (finite values only): [-1, 1], the sign
    kept. A row of zeros (or of NaN) stays as it is."""
    v = np.asarray(values, dtype=np.float64)
    top = np.nanmax(np.where(np.isfinite(v), np.abs(v), np.nan), axis=1, initial=0.0)
    top = np.where(top > 0, top, 1.0)[:, None]  # [rows, 1]
    return v / top


STRIP_WINDOW = 16  # a longer strip opens on this many tokens: ~14 px cells at 800 px


def strip_window(n: int, focus: int, size: int = STRIP_WINDOW) -> tuple[int, int] | None:
    """(first, last) tokens to open a strip of `n` tokens on: `size` of them around `focus`
    (e.g. the token that matters most), inside the strip; None when all of them fit."""
    if n <= size:
        return None
    first = min(max(0, int(focus) - size // 2), n - size)
    return first, first + size - 1


def method_strip(tokens, values, methods, correlations, title: str,
                 subtitle: str = "", window: tuple[int, int] | None = None) -> go.Figure:
    """Left: rows = methods, columns = tokens, each row normalised to its largest |value| (so
    colours compare within a row, red > 0 > blue), the real value in the hover. Right, beside
    each row: that method's Spearman rank correlation with raw attention (the first row).

    tokens: one string per token; values: [n_methods, n_tokens], NaN where a method has no
    value (tokens a decoder's target cannot see, occlusion not run): grey; methods: short
    names; correlations: [n_methods], NaN written as "no value" (the first row's is its own).
    window: (first, last) tokens to open on (`strip_window`), labelled, drag to move and
    double-click to see all.
    """
    tokens = check_tokens(tokens, "tokens")
    methods = check_tokens(methods, "methods")
    v = to_numpy(values, "values", ndim=2, dtype=np.float64)
    r = to_numpy(correlations, "correlations", ndim=1, dtype=np.float64)
    if v.shape != (len(methods), len(tokens)) or r.size != len(methods):
        raise ValueError(f"values must be [methods, tokens] = [{len(methods)}, {len(tokens)}] "
                         f"and correlations [{len(methods)}], got {list(v.shape)}, {r.size}")
    labels = axis_labels(tokens)
    rows = [escape(m) for m in methods]
    real = [["—" if not np.isfinite(x) else f"{x:.4g}" for x in row] for row in v]
    show_x = len(labels) <= MAX_TICK_LABELS or window is not None
    if window is not None:
        subtitle += (f"; showing tokens {window[0]}–{window[1]} of {len(labels)}: drag to "
                     "move, double-click to see all")
    margin = label_margins(rows, labels, show_x=show_x)
    sub, top = subtitle_block(subtitle, figure_px=FULL_PAGE_PX)  # spans the page
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=BAR_SHARE,
                        horizontal_spacing=0.09)  # room for a negative ρ's label
    fig.add_trace(go.Heatmap(
        z=normalise_rows(v), x=labels, y=rows, customdata=real, zmin=-1, zmax=1, zmid=0,
        colorscale=DIVERGING, showscale=False, xgap=1 if len(labels) <= 80 else 0, ygap=2,
        hoverongaps=False, hovertemplate="%{y}<br>token %{x}<br>value %{customdata} "
        "(%{z:.2f} of the row's largest)<extra></extra>"), 1, 1)
    shown = np.where(np.isfinite(r), r, 0.0)
    shown[0] = 0.0  # raw attention against itself: no bar
    text = ["(itself)"] + ["no value" if not np.isfinite(x) else f"{x:+.2f}" for x in r[1:]]
    fig.add_trace(go.Bar(
        x=shown, y=rows, orientation="h", text=text, textposition="outside", cliponaxis=False,
        marker=dict(color=shown, colorscale=DIVERGING, cmin=-1, cmax=1), showlegend=False,
        hovertemplate="%{y}: Spearman with raw attention %{text}<extra></extra>"), 1, 2)
    fig.update_layout(
        template=TEMPLATE, height=int(top + margin["b"] + ROW_PX * len(methods)),
        margin=dict(t=top, l=margin["l"] - 40, b=margin["b"], r=48),  # a +0.95 label
        title=dict(text=escape(title), subtitle=dict(text=sub)), dragmode=False,
        plot_bgcolor="white")
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=show_x,
                     title=dict(text="" if show_x else "tokens (hover for each)"), row=1, col=1)
    if window is not None:
        fig.update_xaxes(range=[window[0] - 0.5, window[1] + 0.5], autorange=False, row=1,
                         col=1)
        fig.update_xaxes(fixedrange=True, row=1, col=2)
        fig.update_yaxes(fixedrange=True)
        fig.update_layout(dragmode="pan")
    fig.update_xaxes(range=[-1, 1], tickvals=[-1, 0, 1], ticktext=["−1", "0", "1"],
                     zeroline=True, zerolinecolor="#555", zerolinewidth=1.5, showgrid=False,
                     title=dict(text="ρ with attention"), row=1, col=2)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.layout.xaxis.update(showgrid=False)
    fig.add_shape(type="rect", xref="x domain", yref="y domain", x0=0, x1=1, y0=0, y1=1,
                  fillcolor=MASKED_GREY, line_width=0, layer="below")
    return fig


LINE_CHARS = 56  # characters on one line of the words figure: what 13 px text fits across the
# narrowest plot (FULL_PAGE_PX less the margins); a wider screen spreads the same lines out
WORD_ROW_PX = 30  # one line of text
WORD_FONT_PX = 13
SPACE_MARKS = ("␣", "▁")  # a token's leading space, as labels draw it: dropped, a gap shows it


def word_text(label: str) -> str:
    """The token of an axis label ("3·␣cat", escaped) as it reads in running text: "cat"."""
    body = label.split("·", 1)[1] if "·" in label else label
    stripped = body.lstrip("".join(SPACE_MARKS))
    return stripped or body


def word_lines(texts: list[str], width: int = LINE_CHARS) -> list[tuple[int, float, float]]:
    """(line, start, length) in characters for each text, laid out left to right and wrapped
    at `width` characters, a gap between neighbours (a hair's width between characters)."""
    letters = all(len(_unescaped(t)) == 1 for t in texts)  # a character model: no gaps
    room, gap = (0.3, 0.05) if letters else (0.6, 0.4)
    out, line, x = [], 0, 0.0
    for t in texts:
        length = max(1, len(_unescaped(t))) + room  # a little room round the letters
        if x > 0 and x + length > width:
            line, x = line + 1, 0.0
        out.append((line, x, length))
        x += length + gap
    return out


def _unescaped(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def words_figure(labels, values, method: str, title: str, subtitle: str = "") -> go.Figure:
    """The text itself, token by token in wrapping lines, each token's box coloured by its
    value scaled to the largest |value| (red > 0 > blue; grey: no value). labels: axis labels
    ("3·cat", escaped: `axis_labels`); values: [n_tokens]; method: the measure's short name."""
    labels = check_tokens(labels, "labels")
    v = to_numpy(values, "values", ndim=1, dtype=np.float64)
    if v.size != len(labels):
        raise ValueError(f"values must have one entry per token ({len(labels)}), got {v.size}")
    scaled = normalise_rows(v[None, :])[0]  # [-1, 1]
    texts = [word_text(lab) for lab in labels]
    places = word_lines(texts)
    colours = [MASKED_GREY if not np.isfinite(s) else
               sample_colorscale(DIVERGING, [(s + 1) / 2])[0] for s in scaled]
    real = ["no value" if not np.isfinite(x) else f"{x:.4g}" for x in v]
    n_lines = places[-1][0] + 1 if places else 1
    fig = go.Figure(go.Bar(
        y=[p[0] for p in places], base=[p[1] for p in places], x=[p[2] for p in places],
        orientation="h", width=0.82, text=texts, textposition="inside", textangle=0,
        insidetextanchor="middle", textfont=dict(size=WORD_FONT_PX), constraintext="none",
        marker=dict(color=colours, line=dict(width=0)), showlegend=False,
        customdata=[[lab, r] for lab, r in zip(labels, real)],
        hovertemplate="token %{customdata[0]}<br>" + escape(method)
        + ": %{customdata[1]}<extra></extra>"))
    sub, top = subtitle_block(subtitle, figure_px=FULL_PAGE_PX)
    fig.update_layout(
        template=TEMPLATE, height=int(top + 30 + WORD_ROW_PX * n_lines), dragmode=False,
        margin=dict(t=top, l=8, r=8, b=20), plot_bgcolor="white", bargap=0,
        title=dict(text=escape(title), subtitle=dict(text=sub)),
        uniformtext=dict(minsize=WORD_FONT_PX, mode="show"),
        xaxis=dict(range=[-0.2, LINE_CHARS + 0.2], visible=False, fixedrange=True),
        yaxis=dict(range=[n_lines - 0.5, -0.5], visible=False, fixedrange=True))
    return fig
