"""Which points of a scatter plot carry a text label, so labels never pile up into a blob.

Plotly draws every label it is given, on top of each other. `spread_labels` keeps a label only
when its box, at an assumed size of the plot on screen, overlaps no label kept before it;
points far from the centre of the cloud go first (the outliers a learner asks about), so a
dense cluster keeps one or two labels and the rest of its points are named on hover.

The plot's real width is only known in the browser. The boxes are laid out for a narrow plot
(an 800 px screen with the sidebar open), so labels are apart there and more so on wider
screens.
"""

from __future__ import annotations

import html

import numpy as np

from .style import label_px

LABEL_FONT_PX = 11  # the size the scatter plots draw their point labels at
TICK_FONT_PX = 13  # the font size style.label_px estimates for
LINE_PX = 15  # a label's height on screen
GAP_PX = 4  # empty space kept between two labels
MAX_LABELS = 40  # at most this many labels in one plot, however many points fit
MARKER_PX = 5  # a marker's radius: a label may not cover another point's marker
LIFT_PX = 12  # the label's centre sits this far above its point ("top center")
CANDIDATES = 1000  # only the points this far out are tried (big views stay fast)


def text_px(label: str) -> float:
    """A label's width on screen in pixels (it arrives HTML-escaped: "&lt;" is one character)."""
    return label_px(html.unescape(label)) * LABEL_FONT_PX / TICK_FONT_PX


def spread_labels(coords, labels, plot_px=(260.0, 440.0),
                  max_labels: int = MAX_LABELS) -> np.ndarray:
    """A boolean mask [point]: True where a point keeps its text label.

    coords: [point, 2 or 3], the plotted positions; labels: one string per point.
    plot_px: the assumed size of the plot area in pixels (width, height[, depth]); each axis's
    range of the data is stretched over it.
    Two kept labels never overlap at that size: their boxes (the text's width by LINE_PX,
    plus GAP_PX) are apart along the first axis or along another axis. In 2D a kept label
    also covers no other point's marker.
    """
    c = np.asarray(coords, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] not in (2, 3) or len(labels) != len(c):
        raise ValueError(f"coords must be [point, 2 or 3] with one label per point; got "
                         f"{list(c.shape)} and {len(labels)} labels")
    n, k = c.shape
    keep = np.zeros(n, dtype=bool)
    finite = np.isfinite(c).all(axis=1)
    if not finite.any() or max_labels <= 0:
        return keep
    sizes = np.resize(np.asarray(plot_px, dtype=np.float64), k)  # [k]
    low, high = c[finite].min(axis=0), c[finite].max(axis=0)  # [k]
    span = np.where(high > low, high - low, 1.0)
    px = (c - low) / span * sizes  # [point, k], on screen
    half_w = np.array([text_px(lab) / 2 for lab in labels])  # [point]
    far = np.linalg.norm(px - px[finite].mean(axis=0), axis=1)  # [point]
    order = [i for i in np.argsort(-far, kind="stable") if finite[i]][:CANDIDATES]
    others = px[finite]  # [point, k]: the markers a label must leave visible
    kept: list[int] = []
    for i in order:
        if k == 2 and _covers_a_marker(px[i], half_w[i], others):
            continue
        if kept:
            j = np.array(kept)
            apart_x = np.abs(px[j, 0] - px[i, 0]) >= half_w[j] + half_w[i] + GAP_PX
            apart_rest = (np.abs(px[j, 1:] - px[i, 1:]) >= LINE_PX + GAP_PX).any(axis=1)
            if not (apart_x | apart_rest).all():
                continue
        kept.append(i)
        keep[i] = True
        if len(kept) >= max_labels:
            break
    return keep


def _covers_a_marker(point, half_width: float, markers: np.ndarray) -> bool:
    """Whether a label drawn above `point` [2] (px) covers any marker but its own."""
    dx = np.abs(markers[:, 0] - point[0])
    dy = np.abs(markers[:, 1] - (point[1] + LIFT_PX))
    hit = (dx < half_width + MARKER_PX) & (dy < LINE_PX / 2 + MARKER_PX)
    own = (markers[:, 0] == point[0]) & (markers[:, 1] == point[1])
    return bool((hit & ~own).any())
