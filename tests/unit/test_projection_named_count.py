"""The embeddings page's scatter plots say how many points are named on the plot: the count
in the subtitle is the number of text labels drawn."""

from __future__ import annotations

import numpy as np

from viz.labels import axis_labels
from viz.projection import joint_qk_figure, named_words, projection_figure


def _drawn(fig) -> int:
    return sum(1 for trace in fig.data if trace.text is not None
               for t in trace.text if t)


def test_projection_subtitle_counts_the_named_points():
    rng = np.random.default_rng(0)
    n = 300
    labels = axis_labels([f"w{i}" for i in range(n)])
    fig = projection_figure(rng.normal(size=(n, 2)), labels, np.arange(n), "position", "PCA")
    named = _drawn(fig)
    assert 3 <= named < n
    assert f"{named} of {n} points are named on the plot; hover for the rest" in \
        fig.layout.title.subtitle.text.replace("<br>", " ")


def test_queries_and_keys_subtitle_counts_both_kinds():
    rng = np.random.default_rng(1)
    n = 200
    labels = axis_labels([f"w{i}" for i in range(n)])
    fig = joint_qk_figure(rng.normal(size=(n, 2)), rng.normal(size=(n, 2)),
                          rng.integers(0, n, n), labels, "qk", "sub")
    named = _drawn(fig)
    sub = fig.layout.title.subtitle.text.replace("<br>", " ")
    assert sub.startswith("sub; ") and f"{named} of {2 * n} points ({n} queries, {n} keys)" in sub


def test_every_point_named_is_said_so():
    assert named_words(13, 13) == "all 13 points are named on the plot"
