"""How many preview columns fit on screen.

The walkthrough's preview tables are drawn by Streamlit's data grid, which sizes each column to
its longest text (header or cell) and, when the columns together are wider than the table,
scrolls sideways: the last columns are cut off, which a learner reads as missing numbers. So the
page keeps only the first columns that fit the narrowest width the table can get, and its
caption counts those.

Widths are estimates in screen pixels of the grid's 14 px font, measured at 1400 and 800 px
windows (a digit is about 6 px, a cell adds about 17 px of padding; the estimate is a little
generous so a wide letter never tips the last column out).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DECIMALS = 3  # "-0.236", "2.370": enough to follow a number from step to step, short enough
# to fit; always this many, so the digits of a column line up and every cell reads alike
CHAR_PX = 7.0
CELL_PAD_PX = 16.0
MIN_COLUMN_PX = 50.0  # the grid draws no column narrower than this
# A table across the page in an 800 px window with the sidebar open (the narrowest layout the
# app is made for): the grid measures 466 px there.
FULL_PX = 460.0
# One of two tables side by side. The page puts a pair in a row that stacks its columns below
# 26rem = 416 px each (ui/page_style.py, containers keyed "wide_"), so a table of a pair is
# never narrower than that.
PAIR_PX = 410.0
MINUS_INFINITY = "−∞"


def _number(v: float, decimals: int) -> str:
    if np.isneginf(v):
        return MINUS_INFINITY
    text = f"{v + 0.0:.{decimals}f}"  # + 0.0: no "-0.000"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def decimals_for(values: np.ndarray) -> int:
    """DECIMALS, or 0 for a table whose finite numbers are all whole (a mask of 0 and −∞
    reads "0", not "0.000")."""
    if values.dtype.kind != "f":
        return 0
    finite = values[np.isfinite(values)]
    return 0 if finite.size and np.all(finite == np.round(finite)) else DECIMALS


def cell_texts(values: np.ndarray, decimals: int | None = None) -> np.ndarray:
    """What the grid shows in each cell, as text [rows, cols]: floats with exactly `decimals`
    decimals ("0.500", "-0.236", "0.000", never "-0.000"; by default `decimals_for`), −∞
    spelled out; integers as they are."""
    if values.dtype.kind != "f":
        return values.astype(str).astype(object)
    decimals = decimals_for(values) if decimals is None else decimals
    flat = [_number(float(v), decimals) for v in values.ravel()]
    return np.array(flat, dtype=object).reshape(values.shape)


def display_values(values: np.ndarray, decimals: int | None = None) -> np.ndarray:
    """The values as the grid gets them: rounded numbers (right-aligned, sortable; the page
    shows them with `decimals` fixed decimals, by default `decimals_for`), or text when some
    cell is −∞ (a blocked score)."""
    if values.dtype.kind != "f":
        return values
    decimals = decimals_for(values) if decimals is None else decimals
    if np.isneginf(values).any():
        return cell_texts(values, decimals)
    return np.round(values, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0


def text_px(text: str) -> float:
    return CELL_PAD_PX + CHAR_PX * len(text)


def column_px(texts: Sequence[str]) -> float:
    """The estimated width of one column holding these texts (its header and its cells)."""
    return max([MIN_COLUMN_PX] + [text_px(str(t)) for t in texts])


def table_px(index: Sequence[str], headers: Sequence[str], cells: np.ndarray) -> float:
    """The estimated width of a whole table: its row labels plus every column."""
    return column_px(index) + sum(column_px([h, *cells[:, j]]) for j, h in enumerate(headers))


def fitting_columns(index: Sequence[str], headers: Sequence[str], cells: np.ndarray,
                    budget_px: float) -> int:
    """How many of the first columns fit in `budget_px` beside the row labels (at least 1,
    so a table is never empty). `cells` is [rows, len(headers)] of display text."""
    used, n = column_px(index), 0
    for j, header in enumerate(headers):
        used += column_px([header, *cells[:, j]])
        if used > budget_px:
            break
        n += 1
    return max(n, 1)
