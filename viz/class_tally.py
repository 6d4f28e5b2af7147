"""A live class's answers to one question as figures: counts per option, or the key tokens
the class clicked in one row, and after the reveal the model's own answer beside them.

Pure: lists in, a plotly Figure out. Options and tokens are escaped (plotly renders a little
HTML in labels), so a lesson's words show as they are written."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .labels import axis_labels
from .style import escape, titled_layout

CLASS_COLOUR, RIGHT_COLOUR, OTHER_COLOUR, MODEL_COLOUR = "#4c78a8", "#2e8b57", "#b0b7c3", "#e45756"
MAX_OPTION_CHARS = 60  # an option's label on the axis (hover shows it whole)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_OPTION_CHARS else text[: MAX_OPTION_CHARS - 1] + "…"


def choice_tally(options: Sequence[str], counts: Sequence[int],
                 answer: int | None = None, compact: bool = False) -> go.Figure:
    """How many chose each option (horizontal bars, first option on top). `answer`: the index
    of the model's answer, once revealed: its bar green, the others grey. `compact`: thinner
    bars, for a screen that also holds the reveal button and the figure's place."""
    if len(options) != len(counts):
        raise ValueError(f"expected one count per option: {len(options)} options, "
                         f"{len(counts)} counts")
    labels = [("✔ " if i == answer else "") + f"{i + 1}. {escape(_short(o))}"
              for i, o in enumerate(options)]
    colours = [CLASS_COLOUR if answer is None else RIGHT_COLOUR if i == answer else OTHER_COLOUR
               for i in range(len(options))]
    total = sum(counts)
    fig = go.Figure(go.Bar(
        y=labels, x=list(counts), orientation="h", marker_color=colours,
        text=[f"{c} ({c / total:.0%})" if total else "0" for c in counts],
        textposition="auto", hovertext=[escape(o) for o in options], hoverinfo="text+x",
        cliponaxis=False))
    fig.update_yaxes(autorange="reversed", automargin=True, dtick=1)  # every option named
    fig.update_xaxes(title="students", rangemode="tozero", dtick=max(1, round(total / 5)) or 1)
    title = "The class's answers" if answer is None else \
        "The class's answers; ✔ and green: the model's answer"
    if compact:  # one title line, no axis under the bars (each bar says its count)
        fig.update_xaxes(visible=False)
        return titled_layout(fig, f"{title} · {total} answered", height=50 + 40 * len(options),
                             margin=dict(l=20, r=30, t=40, b=10), showlegend=False)
    return titled_layout(fig, title, f"{total} answered", height=max(220, 90 + 56 * len(options)),
                         margin=dict(l=20, r=30, t=80, b=60), showlegend=False)


def cell_tally(tokens: Sequence[str], counts: Sequence[int],
               attention: Sequence[float] | None = None, row_label: str = "",
               compact: bool = False) -> go.Figure:
    """Which key token the class clicked in one row: the share of the class per key. After the
    reveal, `attention` (the row's real weights) is drawn beside it, as a share of the row.
    `compact`: a lower figure (see choice_tally)."""
    if len(tokens) != len(counts):
        raise ValueError(f"expected one count per token: {len(tokens)} tokens, "
                         f"{len(counts)} counts")
    if attention is not None and len(attention) != len(tokens):
        raise ValueError(f"expected one weight per token: {len(tokens)} tokens, "
                         f"{len(attention)} weights")
    labels = axis_labels(list(tokens))
    total = sum(counts)
    shares = [c / total if total else 0.0 for c in counts]
    fig = go.Figure(go.Bar(x=labels, y=shares, name="the class's picks",
                           marker_color=CLASS_COLOUR,
                           customdata=list(counts), hovertemplate="%{x}: %{customdata} picked"
                           "<extra></extra>"))
    if attention is not None:
        fig.add_bar(x=labels, y=[float(a) for a in attention], name="the model's attention",
                    marker_color=MODEL_COLOUR,
                    hovertemplate="%{x}: %{y:.0%} of the row<extra></extra>")
    fig.update_yaxes(tickformat=".0%", rangemode="tozero", title="share")
    fig.update_xaxes(tickangle=-60 if len(tokens) > 8 else 0, automargin=True)
    title = f"Row of “{row_label}”: which key the class picked" if row_label else \
        "Which key the class picked"
    if compact:  # one title line, a lower plot
        return titled_layout(fig, f"Keys picked · {total} answered", height=210,
                             margin=dict(l=60, r=20, t=40, b=80), barmode="group",
                             showlegend=False)
    return titled_layout(fig, title, f"{total} answered", height=380,
                         margin=dict(l=60, r=20, t=80, b=90), barmode="group",
                         legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0))
