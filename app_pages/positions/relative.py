"""The positions page's section for a model with relative positions (T5): no table of
position vectors to draw, but one learned number per head and per distance, added to every
attention score. The numbers come from analysis/positions.py, the figure from viz/positions.py.
"""

from __future__ import annotations

import streamlit as st

from analysis.positions import relative_bias
from ui.charts import chart_config
from viz.positions import relative_bias_figure

SIDES = ("The encoder (reads the text)", "The decoder (writes the answer)")


def show_relative_bias(loaded) -> None:
    """Draw the relative position bias of a loaded T5 (model/runner.py's Seq2SeqModel)."""
    rel = loaded.model.rel_bias
    st.header("Positions as a nudge to the scores")
    st.markdown(
        "This model adds no position vector to the words at all. Instead, whenever one word "
        "looks at another, it adds a learned number to their score, and that number depends "
        "only on **how far apart** the two words are (and differs from head to head: each head "
        "is one of the model's separate ways of looking). Nearby distances each have their own "
        f"number; further away, whole ranges of distances share one, and from {rel.max_distance} "
        "positions on every distance gets the same number. The same numbers are used in every "
        "layer. Red cells make the head look more at words that far away; blue cells less.")
    side = st.radio("Which part of the model", SIDES, key="pos_rel_side", horizontal=True,
                    help="The decoder only looks back at what it has written so far, so its "
                         "distances are never positive.")
    decoder = side == SIDES[1]
    distances, bias = relative_bias(loaded.model, decoder=decoder)
    part = "decoder" if decoder else "encoder"
    fig = relative_bias_figure(distances, bias,
                               f"What each {part} head adds to a score, by distance",
                               "Negative distances: the other word comes before; positive: "
                               "after.")
    st.plotly_chart(fig, key="pos_rel_bias", config=chart_config("relative-position-bias", fig))
    st.caption(f"{bias.shape[0]} heads × {len(distances)} distances, learned from "
               f"{rel.n_buckets} numbers per head in each part.")
