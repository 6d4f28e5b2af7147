"""Figure exports (ui/charts.py): named after what they show, cropped to the figure."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from ui import charts


def _square_heatmap(n_rows: int, n_cols: int, height: int = 500, title: str = "T") -> go.Figure:
    fig = go.Figure(go.Heatmap(z=np.zeros((n_rows, n_cols))))
    fig.update_layout(height=height, margin=dict(l=100, r=100, t=80, b=70), title=title,
                      yaxis=dict(scaleanchor="x"))
    return fig


def test_a_square_heatmap_stretched_to_the_page_is_cropped_to_its_plot():
    # plot: 500 - 80 - 70 = 350 px tall; 12 × 12 square cells -> 350 px wide + 200 of margins
    assert charts.export_size(_square_heatmap(12, 12)) == (550, 500)
    # 3 rows × 12 columns: the plot is four times wider than tall
    assert charts.export_size(_square_heatmap(3, 12)) == (200 + 4 * 350, 500)


def test_the_crop_keeps_room_for_a_long_title():
    fig = _square_heatmap(2, 2, title="A title much longer than the tiny plot under it, " * 2)
    width, _ = charts.export_size(fig)
    assert width >= len(fig.layout.title.text) * charts.TITLE_CHAR_PX


def test_a_figure_with_its_own_size_keeps_it_and_others_are_left_alone():
    sized = _square_heatmap(4, 4)
    sized.update_layout(width=640)
    assert charts.export_size(sized) == (640, 500)
    bars = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    bars.update_layout(height=300)
    assert charts.export_size(bars) is None  # it fills the page's width anyway
    assert charts.export_size(go.Figure(go.Heatmap(z=[[1]]))) is None  # no height to go by


@pytest.mark.parametrize("view, details, where, name", [
    ("attention", ("Layer 2, head 5",), {}, "minilm_attention_layer-2-head-5"),
    ("attention", ("Attention rollout through layer 3",), {},
     "minilm_attention_rollout-through-layer-3"),
    ("qk", (), {"layer": 2, "head": 5, "query": 7}, "minilm_qk_L2_H5_query-7"),
    ("token lines", (), {"layer": 0, "head": None}, "minilm_token-lines_L0"),
    ("<b>x</b>/../../etc", (), {}, "minilm_b-x-b-etc"),
])
def test_export_names_say_what_the_figure_shows(monkeypatch, view, details, where, name):
    monkeypatch.setattr(charts, "_model_part", lambda: "minilm")
    assert charts.export_name(view, *details, **where) == name


def test_a_model_folder_is_named_by_its_folder_never_its_path(monkeypatch):
    class Selection:
        model_name = "/srv/models/Class GPT"

    monkeypatch.setattr(charts.st, "session_state", {"selection": Selection()})
    assert charts.export_name("lens") == "class-gpt_lens"
    monkeypatch.setattr(charts.st, "session_state", {
        "selection": Selection(), "trained_models": {"trained: induction": Selection.model_name}})
    assert charts.export_name("lens") == "trained-induction_lens"


def test_a_figure_alone_is_named_by_its_title(monkeypatch):
    monkeypatch.setattr(charts.st, "session_state", {})
    monkeypatch.setattr(charts, "_model_part", lambda: "tiny-chars")
    fig = _square_heatmap(3, 3, title="Attention pattern, layer 1, head 3<br><sup>x</sup>")
    saved = charts.chart_config("walkthrough", fig)["toImageButtonOptions"]
    assert saved["filename"] == "tiny-chars_walkthrough_attention-pattern-layer-1-head-3-x"
    assert saved["format"] == "png" and (saved["width"], saved["height"]) == (550, 500)
    named = charts.chart_config("walkthrough", fig, layer=1)["toImageButtonOptions"]
    assert named["filename"] == "tiny-chars_walkthrough_L1"  # what the caller says wins
