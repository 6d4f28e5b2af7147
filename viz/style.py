"""One look for every figure: a compact template, the colour scales, and input checks."""

from __future__ import annotations

import html
import math
import textwrap
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
ROWS_ARE_QUERIES = "rows = queries (attending), columns = keys (attended to)"
# A square heatmap's plot (inside the margins) is CELL_PX per token, at least PLOT_PX_LOW (short
# inputs get cells big enough to read) and at most PLOT_PX_HIGH (long inputs, as before).
PLOT_PX_LOW, PLOT_PX_HIGH, CELL_PX = 420, 720, 28
# Plotly never wraps a title: a subtitle is broken into lines of at most SUBTITLE_CHARS
# characters (about 330 px of plotly's subtitle text, SUBTITLE_CHAR_PX a character), so it fits
# a figure in half a page. A figure that says how wide it is (`figure_px`) gets lines as long
# as it fits, but never longer than the page is wide on an 800 px screen: there, Streamlit
# narrows every figure to the main column beside the open sidebar (measured in Chromium: 468
# px), FULL_PAGE_PX.
SUBTITLE_CHARS, SUBTITLE_CHAR_PX, FULL_PAGE_PX = 60, 5.6, 468
SUBTITLE_CHARS_MAX = int((FULL_PAGE_PX - 40) / SUBTITLE_CHAR_PX)  # 76
HALF_PAGE_PX = 460  # one of two figures side by side on a 1400 px screen with the sidebar open
TITLE_PX, SUBTITLE_LINE_PX = 42, 29  # the top margin: the title, then a step per line
TEMPLATE_TOP = 80  # the template's top margin: a title and one subtitle line

# Kept small on purpose: plotly's default template adds ~8 KB to every figure's JSON.
TEMPLATE = go.layout.Template(layout=dict(
    font=dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13, color="#222"),
    paper_bgcolor="white", plot_bgcolor="white", colorway=list(HEAD_COLOURS),
    margin=dict(l=70, r=30, t=TEMPLATE_TOP, b=60), hoverlabel=dict(namelength=-1),
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


# Plotly sizes text it fits into a cell (a heatmap's texttemplate with no font size) by
# counting each character as this share of the font size wide.
PLOTLY_CHAR_EM = 0.65


def fitted_font_px(cell_px: float, chars: int) -> float:
    """The font size (px) at which `chars` characters fill a cell `cell_px` wide, as plotly
    counts them: the size it would shrink fitted cell text to."""
    return cell_px / (PLOTLY_CHAR_EM * max(chars, 1))


def tick_step(cell_px: float, need_px: float, angle: float = 0) -> int:
    """Label every step-th of positions `cell_px` apart so neighbouring labels keep `need_px`
    apart: measured along the axis for level labels (angle 0: their width plus a gap), across
    the labels for ones slanted `angle` degrees from the axis (their height plus a gap)."""
    across = cell_px * (math.sin(math.radians(angle)) if angle else 1.0)
    return max(1, math.ceil(need_px / across))


def keep_apart(candidates, step: int, kept=()) -> list[int]:
    """From `candidates` in order of priority, the positions no closer than `step` to any
    position in `kept` or already taken, sorted."""
    taken = [int(k) for k in kept]
    for t in candidates:
        if all(abs(int(t) - s) >= step for s in taken):
            taken.append(int(t))
    return sorted(taken[len(kept):])


def figure_height(n_rows: int, per_row: float = 18, low: int = 420, high: int = 860) -> int:
    return int(min(high, max(low, 160 + per_row * n_rows)))


def square_plot_px(n: int, low: int = PLOT_PX_LOW, high: int = PLOT_PX_HIGH,
                   per_cell: float = CELL_PX) -> int:
    """The side (px) of the plot of an n × n heatmap: `per_cell` per token within [low, high]."""
    return int(min(high, max(low, per_cell * n)))


def heatmap_size(n_rows: int, n_cols: int, margin: dict, max_width: int | None = None,
                 min_plot: int = 160) -> dict:
    """`width` and `height` of a figure whose plot has square cells and is sized to the
    matrix (see `square_plot_px`), the margins around it. The figure is exactly that wide, so
    a colour bar drawn at the plot's right edge sits beside it. `max_width` caps the whole
    figure (a half-page column), shrinking the cells. Shown with `width="content"`, Streamlit
    also shrinks a figure to a narrower screen; its cells then become taller than wide."""
    n = max(n_rows, n_cols, 1)
    side = square_plot_px(n)
    if max_width is not None:
        side = min(side, max(min_plot, max_width - margin["l"] - margin["r"]))
    cell = side / n
    return dict(width=int(margin["l"] + margin["r"] + max(min_plot, cell * n_cols)),
                height=int(margin["t"] + margin["b"] + max(min_plot, cell * n_rows)))


def subtitle_chars(figure_px: float | None) -> int:
    """How many subtitle characters fit on one line of a figure `figure_px` wide (the margin
    before the title included); SUBTITLE_CHARS when the width is not known."""
    if not figure_px:
        return SUBTITLE_CHARS
    return int(min(SUBTITLE_CHARS_MAX, max(SUBTITLE_CHARS, (figure_px - 40) / SUBTITLE_CHAR_PX)))


def wrap_lines(text: str, width: int = SUBTITLE_CHARS) -> list[str]:
    """Plain text in lines of at most `width` characters, broken after "; " where possible
    (so a clause stays on one line), else between words. The lines are balanced: the same
    number of lines as the widest wrap, each as short as that allows (and as many lines
    ending a clause), so no word is left alone on the last line."""
    lines = _wrap_clauses(text, width)
    clause_ends = sum(line.endswith(";") for line in lines)
    for narrower in range(max(1, math.ceil(len(text) / len(lines))), width):
        balanced = _wrap_clauses(text, narrower)
        if (len(balanced) == len(lines)
                and sum(line.endswith(";") for line in balanced) >= clause_ends):
            return balanced
    return lines


def _wrap_clauses(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for clause in text.split("; "):
        clause_lines = textwrap.wrap(clause, width) or [""]
        if lines and len(lines[-1]) + 2 + len(clause_lines[0]) <= width:
            lines[-1] += "; " + clause_lines.pop(0)
        elif lines:
            lines[-1] += ";"
        lines += clause_lines
    return lines


def subtitle_block(text: str, width: int = SUBTITLE_CHARS,
                   figure_px: float | None = None) -> tuple[str, int]:
    """A subtitle as escaped lines joined by <br>, and the top margin (px) that fits the title
    above it and every line. With `figure_px`, the lines are as long as that width fits."""
    if figure_px:
        width = subtitle_chars(figure_px)
    lines = wrap_lines(text, width) if text else []
    return "<br>".join(escape(line) for line in lines), top_margin(len(lines))


def top_margin(subtitle_lines: int) -> int:
    """A top margin that fits the title and `subtitle_lines` lines under it. Plotly centres
    the title block in the margin (measured in Chromium: the title starts near t/2 - 16 px and
    each subtitle line takes 14.5 px), so each line costs two of its heights."""
    return max(TEMPLATE_TOP, TITLE_PX + SUBTITLE_LINE_PX * max(1, subtitle_lines))


def escape(text) -> str:
    """Text for a figure title or label: plotly renders a little HTML, so user text is escaped."""
    return html.escape(str(text), quote=False)


def titled_layout(fig: go.Figure, title: str, subtitle: str = "", height: int = 420,
                  margin: dict | None = None, figure_px: float | None = None,
                  **rest) -> go.Figure:
    """The shared look with an escaped title, a subtitle wrapped to fit, a height and margins
    (the top margin grows with the subtitle's lines). The subtitle's lines fit `figure_px`,
    or the figure's own width when it has one (half a page when neither is known)."""
    width = figure_px or rest.get("width") or fig.layout.width
    sub, top = subtitle_block(subtitle, figure_px=width)
    margin = dict(margin or dict(l=70, r=30, t=90, b=90))
    margin["t"] = max(margin.get("t", 0), top)
    fig.update_layout(template=TEMPLATE, height=height,
                      title=dict(text=escape(title), subtitle=dict(text=sub)),
                      margin=margin, **rest)
    return fig


# Projector mode (ui/projector.py): fonts and margins grow by ROOM_SCALE; the sidebar is
# hidden, so a figure sized to its content (`heatmap_size`) wider than half a page is a
# page's main figure and its plot grows to fill ROOM_PAGE_PX, the page's width on the
# smallest room screen (1024 px, less the page's padding), by at most ROOM_FILL_MAX (a plot
# already wider is narrowed to fit it: Streamlit would squeeze it to the page anyway, making
# its cells taller than wide). A narrower one (one of two side by side) grows by ROOM_SCALE
# within ROOM_PAGE_PX, its plot never shrinking.
ROOM_SCALE, ROOM_PAGE_PX, ROOM_FILL_MAX = 1.35, 940, 2.5
# On a narrower screen (an 800 px projector: the page is 752 px) Streamlit narrows the figure
# to the page, its height kept: the plot loses width only, so labels along x are spaced for it.
ROOM_NARROW_PX = 752
LABEL_EM = 1.05  # a tick label needs this many of its font size across (its glyphs ~0.95), a gap


def room_size(width: float, height: float, margin: dict, scale: float = ROOM_SCALE) -> dict:
    """`width`, `height` and `margin` of a figure sized to its content, for projector mode:
    margins (and so the labels in them) grow by `scale`; the plot keeps its aspect (square
    cells stay square) and fills ROOM_PAGE_PX when the figure is wider than HALF_PAGE_PX
    (growing at most ROOM_FILL_MAX times), else grows by `scale` within ROOM_PAGE_PX."""
    big = {side: int(margin.get(side, 0) * scale) for side in "lrtb"}
    plot_w = max(1.0, width - margin.get("l", 0) - margin.get("r", 0))
    plot_h = max(1.0, height - margin.get("t", 0) - margin.get("b", 0))
    room = ROOM_PAGE_PX - big["l"] - big["r"]
    if width > HALF_PAGE_PX:
        grow = min(ROOM_FILL_MAX, room / plot_w)
    else:
        grow = max(1.0, min(scale, room / plot_w))
    return dict(width=int(big["l"] + big["r"] + plot_w * grow),
                height=int(big["t"] + big["b"] + plot_h * grow), margin=big)


def room_ticks(n: int, plot_px: float, font_px: float, low_px: float, angle: float = 90,
               label_px_at_low: float = 0) -> tuple[float, int]:
    """The tick font size and step for `n` category labels along a plot `plot_px` long: the
    font as large as `font_px` while every label fits, no smaller than `low_px`; then every
    step-th label so neighbours never overlap. `angle`: the labels' angle from the axis
    (90: y labels written across; 60: x labels slanted; 0: x labels written along the axis,
    which need their width, `label_px_at_low` at `low_px`)."""
    cell = plot_px / max(n, 1)
    if not angle:
        need = label_px_at_low * font_px / low_px + 4
        font = font_px if need <= cell else low_px
        width = label_px_at_low * font / low_px + 4
        return font, tick_step(cell, width, 0)
    across = cell * math.sin(math.radians(angle))
    font = min(font_px, max(low_px, across / LABEL_EM))
    return font, tick_step(cell, font * LABEL_EM * (1 - 1e-9), angle)  # exactly fitting: 1
