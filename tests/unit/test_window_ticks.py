"""A zoomed attention map (compare page, long text) labels the changed token.
Plotly's own ticks on the zoomed window were every other token and skipped token 7."""

from __future__ import annotations

import numpy as np

from viz.attention import attention_heatmap, window_ticks


def _zoomed(n: int, window, changed, max_width=460):
    tokens = [f"w{i}" for i in range(n)]
    z = np.full((n, n), 1.0 / n)
    return attention_heatmap(z, tokens, tokens, window=window, changed=changed,
                             max_width=max_width)


def test_the_changed_token_is_labelled_on_both_axes_of_a_zoomed_map():
    for changed in ([7], [8], [7, 8], [22]):
        fig = _zoomed(60, (0, 22), changed)
        for axis in (fig.layout.xaxis, fig.layout.yaxis):
            assert axis.tickmode == "array"
            for c in changed[:1]:
                assert f"{c}·w{c}" in axis.ticktext
            assert list(axis.tickvals) == list(axis.ticktext)
            assert len(axis.ticktext) >= 23 // 3  # not just the changed one
            assert all(int(t.split("·")[0]) <= 22 for t in axis.ticktext)  # in the window


def test_all_positions_are_labelled_when_they_fit_else_the_changed_stays():
    assert window_ticks((0, 9), 400, [3]) == list(range(10))
    thinned = window_ticks((10, 40), 300, [17], angle=90)
    assert 17 in thinned and 16 not in thinned and 18 not in thinned
    assert all(b - a >= 2 for a, b in zip(thinned, thinned[1:]))
    assert window_ticks((0, 30), 300, [99]) == list(range(0, 31, 2))  # outside: ignored


def test_an_unzoomed_map_keeps_plotlys_own_ticks():
    fig = _zoomed(20, None, [])
    assert fig.layout.xaxis.tickmode is None and fig.layout.xaxis.tickvals is None
