"""What a class learned in the concept check, as one figure for the projector: a row per
misconception (in plain words), the share of the class right before the course (grey dot) and
after it (coloured dot), a line between them.

Pure: lists in, a plotly Figure out. The words are escaped (plotly renders a little HTML)."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .class_tally import CLASS_COLOUR, OTHER_COLOUR
from .style import escape, titled_layout, wrap_lines

ROW_PX = 46  # a misconception's row: two lines of its words
LABEL_CHARS = 40  # a line of a row's words


def _label(text: str) -> str:
    return "<br>".join(escape(line) for line in wrap_lines(text, LABEL_CHARS)[:2])


def check_map(beliefs: Sequence[str], before: Sequence[float | None],
              after: Sequence[float | None], answered: tuple[int, int]) -> go.Figure:
    """`before`/`after`: the share right (0–1) per misconception, None where nobody answered
    yet; `answered`: how many students took the first and the second check."""
    if not len(beliefs) == len(before) == len(after):
        raise ValueError("expected one share before and after per misconception: "
                         f"{len(beliefs)}, {len(before)}, {len(after)}")
    labels = [_label(b) for b in beliefs]
    pct = [[None if v is None else 100 * v for v in shares] for shares in (before, after)]
    fig = go.Figure()
    for label, b, a in zip(labels, *pct):
        if b is not None and a is not None:
            fig.add_trace(go.Scatter(x=[b, a], y=[label, label], mode="lines",
                                     line=dict(color="#888", width=2), hoverinfo="skip",
                                     showlegend=False))
    for name, values, colour, side in (("before the course", pct[0], OTHER_COLOUR, "left"),
                                       ("after", pct[1], CLASS_COLOUR, "right")):
        # each dot says its share, on its own side of the line (the axis may be off screen)
        fig.add_trace(go.Scatter(
            x=values, y=labels, mode="markers+text", name=name,
            text=[None if v is None else f"{v:.0f}%" for v in values],
            textposition=f"middle {side}", textfont=dict(color="#333"),
            marker=dict(size=14, color=colour, line=dict(color="#333", width=1)),
            hovertemplate="%{x:.0f}% right<extra>" + name + "</extra>", cliponaxis=False))
    fig.update_yaxes(autorange="reversed", automargin=True, categoryorder="array",
                     categoryarray=labels)
    fig.update_xaxes(title="share of the class right", range=[-12, 112], ticksuffix="%",
                     tickvals=[0, 25, 50, 75, 100], side="top")
    took = (f"Grey: before the course, blue: after. {answered[0]} took the first check, "
            f"{answered[1]} the second.")
    return titled_layout(fig, "What the class got right, before and after", took,
                         height=int(140 + ROW_PX * len(beliefs)),
                         margin=dict(l=20, r=30, t=130, b=20), showlegend=False)
