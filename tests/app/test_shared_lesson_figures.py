"""A lesson step's figure is built once per server and shared by every session that shows the
same view (app_pages/heads.py and app_pages/attention/page.py, through ui/cache.shared): a class
following its teacher draws one figure, not thirty. Another view gets its own figure, and
projector mode draws an enlarged copy without changing the shared one."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_lesson  # noqa: E402

pytestmark = pytest.mark.app

LESSON = "minilm-heads"  # step 1: the head grid; steps 3 and 5: two heads' heatmaps


def _kept(kind: str) -> dict:
    """The shared memory budget's entries of one kind: key -> the value itself."""
    from ui.cache import _run_cache

    return {key: value for key, (value, _) in list(_run_cache()._items.items())
            if key[0] == kind}


def _spec(at, key: str) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == key)


@pytest.fixture(autouse=True)
def empty_budget():
    from ui.cache import _run_cache

    _run_cache.clear()
    yield
    _run_cache.clear()


def test_two_sessions_on_a_step_draw_the_one_head_grid():
    first = open_lesson(LESSON, 1)
    assert not first.exception, [e.value for e in first.exception]
    grids = _kept("head_grid_figure")
    assert len(grids) == 1
    (built,) = grids.values()
    second = open_lesson(LESSON, 1)
    assert not second.exception
    (kept,) = _kept("head_grid_figure").values()
    assert kept is built  # not built again for the second session
    assert _spec(first, "hs_grid") == _spec(second, "hs_grid")
    assert _spec(second, "hs_grid")["data"][0]["type"] == "heatmap"


def test_each_view_has_its_own_heatmap_and_a_session_on_it_gets_that_one():
    looks_back = open_lesson(LESSON, 3)
    on_markers = open_lesson(LESSON, 5)
    heatmaps = _kept("attention_step_heatmap")
    assert len(heatmaps) == 2  # two heads, two figures
    titles = {_spec(at, "attn_heatmap")["layout"]["title"]["text"]
              for at in (looks_back, on_markers)}
    assert len(titles) == 2 and all(t.startswith("Layer ") for t in titles)
    again = open_lesson(LESSON, 3)
    assert len(_kept("attention_step_heatmap")) == 2
    assert _spec(again, "attn_heatmap") == _spec(looks_back, "attn_heatmap")
    for (fig, title) in _kept("attention_step_heatmap").values():
        assert fig.layout.title.text == title  # what chart_config names the download after


def test_projector_mode_enlarges_a_copy_and_leaves_the_shared_figure_as_it_was():
    plain = open_lesson(LESSON, 3)
    ((shared, _),) = _kept("attention_step_heatmap").values()
    size, height = shared.layout.font.size, shared.layout.height
    big = open_lesson(LESSON, 3, projector=1)
    assert not big.exception
    assert _spec(big, "attn_heatmap")["layout"]["height"] > _spec(plain, "attn_heatmap")[
        "layout"]["height"]
    ((still, _),) = _kept("attention_step_heatmap").values()
    assert still is shared and (still.layout.font.size, still.layout.height) == (size, height)
    assert _spec(open_lesson(LESSON, 3), "attn_heatmap") == _spec(plain, "attn_heatmap")
