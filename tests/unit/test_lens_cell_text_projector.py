"""The logit lens's in-cell letters are the point of the figure: at least 14 px
when the cells allow (plotly's own fit when they do not), and projector mode enlarges every
fixed in-cell text size, not only the axes."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui import projector
from viz.lens import CELL_FONT_MAX, CELL_FONT_MIN, cell_font_size, lens_table


def _table(n_pos: int, token: str = "a") -> go.Figure:
    rows, k = 3, 2
    tops = [[[token, "b"] for _ in range(n_pos)] for _ in range(rows)]
    probs = np.full((rows, n_pos, k), 0.4)
    rank = np.ones((rows, n_pos), dtype=np.int64)
    return lens_table([f"layer {i}" for i in range(rows)], ["x"] * n_pos, tops, probs,
                      ["y"] * n_pos, rank, np.full((rows, n_pos), 0.3))


def test_single_letters_in_a_twelve_column_window_are_large():
    size = _table(12).data[0].textfont.size
    assert CELL_FONT_MIN <= size <= CELL_FONT_MAX and size >= 14


def test_small_cells_leave_the_size_to_plotly():
    assert _table(40).data[0].textfont.size is None  # 40 narrow cells: plotly fits the text
    assert _table(12, "Ġlighthouse").data[0].textfont.size is None  # long tokens too
    assert cell_font_size(["a"], 1) == CELL_FONT_MAX
    assert cell_font_size(["&amp;"], 12) == cell_font_size(["&"], 12)  # counted unescaped


def test_projector_mode_enlarges_fixed_in_cell_text_and_keeps_the_original():
    fig = _table(12)
    before = fig.data[0].textfont.size
    big = projector.enlarged(fig)
    assert big.data[0].textfont.size == before * projector.SCALE
    assert fig.data[0].textfont.size == before  # the given (often shared) figure is unchanged
    scatter = go.Figure(go.Scatter(x=[0], y=[0], text=["a"], mode="text",
                                   textfont=dict(size=[10, 12])))
    assert list(projector.enlarged(scatter).data[0].textfont.size) == [
        10 * projector.SCALE, 12 * projector.SCALE]
    auto = projector.enlarged(_table(40))  # plotly's fit: grows with the larger layout font
    assert auto.data[0].textfont.size is None and auto.layout.font.size > 12
