"""Unit tests for viz/: labels, the heatmap, the all-heads overview, lines, Q·K and export."""

from __future__ import annotations

import base64
import csv
import html
import io
import json

import numpy as np
import pytest
import torch

from model.config import TransformerConfig
from model.trace import Trace
from viz.attention import (
    TICK_LABEL_LIMIT, attention_heatmap, head_lines, head_overview, qk_figure,
)
from viz.export import PLOTLY_CONFIG, matrix_csv, plotly_config, trace_npz
from viz.labels import axis_labels, is_label
from viz.overview import N_LEVELS, block_max
from viz.training import snapshot_grid

RNG = np.random.default_rng(0)


def _rows(shape) -> np.ndarray:
    a = RNG.random(shape).astype(np.float32) ** 3
    return a / a.sum(-1, keepdims=True)


# --------------------------------------------------------------------------------- labels
def test_labels_escape_html_and_make_duplicates_unique():
    labels = axis_labels(["<b>", "the", "the", "<script>alert(1)</script>", "a&b"])
    assert labels == ["0·&lt;b&gt;", "1·the", "2·the", "3·&lt;script&gt;alert(1)&lt;/scrip…",
                      "4·a&amp;b"]
    assert len(set(labels)) == len(labels)
    assert not any("<" in l or ">" in l for l in labels)


def test_labels_make_invisible_characters_visible():
    labels = axis_labels(["ĠThe", "Ġcat", "Ċ", "zero\u200bwidth", "\x1b", "", " ", "\u202eevil"])
    assert labels[:3] == ["0·␣The", "1·␣cat", "2·↵"]
    assert labels[3] == "3·zero⟨U+200B⟩width"
    assert labels[4] == "4·␛" and labels[5] == "5·⟨empty⟩" and labels[6] == "6·␣"
    assert "\u202e" not in labels[7] and "U+202E" in labels[7]


def test_byte_level_marks_are_kept_for_non_byte_level_tokens():
    # No token carries "Ġ"/"Ċ", so "ĉ" is a letter (Esperanto), not GPT-2's tab.
    assert axis_labels(["ĉu", "vi"]) == ["0·ĉu", "1·vi"]


def test_labels_are_idempotent_and_a_subset_passes_through():
    labels = axis_labels(["[CLS]", "<i>x", "Ġy", "[SEP]"])
    assert axis_labels(labels) == labels
    assert axis_labels(labels[1:3]) == labels[1:3]  # as after hiding special tokens
    assert all(is_label(l) for l in labels)
    assert not is_label("3·<b>")  # unescaped text is not a finished label


def test_labels_reject_non_strings():
    with pytest.raises(ValueError, match="strings"):
        axis_labels("abc")
    with pytest.raises(ValueError, match="strings"):
        axis_labels([1, 2])


# -------------------------------------------------------------------------------- heatmap
def test_heatmap_z_and_axes_match_the_input():
    m = _rows((4, 4))
    tokens = ["[CLS]", "cat", "cat", "[SEP]"]
    fig = attention_heatmap(m, tokens, tokens, title="Layer 1, head 2")
    heat = fig.data[0]
    assert heat.type == "heatmap"
    np.testing.assert_array_equal(np.asarray(heat.z), m)
    assert list(heat.y) == axis_labels(tokens) and list(heat.x) == axis_labels(tokens)
    assert "query %{y} → key %{x}" in heat.hovertemplate
    assert fig.layout.yaxis.autorange == "reversed"  # query 0 on top
    assert "rows = queries" in fig.layout.title.subtitle.text
    assert "columns = keys" in fig.layout.title.subtitle.text
    assert fig.layout.title.text == "Layer 1, head 2"
    assert not fig.layout.annotations  # not causal: nothing marked


def test_causal_heatmap_marks_the_upper_triangle():
    m = np.tril(_rows((5, 5)))
    fig = attention_heatmap(m, list("abcde"), list("abcde"), causal=True)
    z = np.asarray(fig.data[0].z)
    upper = np.triu(np.ones((5, 5), bool), 1)
    assert np.isnan(z[upper]).all()
    np.testing.assert_array_equal(z[~upper], m[~upper])
    assert fig.data[0].hoverongaps is False
    assert fig.layout.plot_bgcolor not in (None, "white")  # NaN cells show this grey
    assert any("masked (causal)" in a.text for a in fig.layout.annotations)
    assert "masked" in fig.layout.title.subtitle.text


def test_heatmap_extra_mask_and_escaped_title():
    mask = np.zeros((2, 3), bool)
    mask[:, 2] = True  # a padding key
    fig = attention_heatmap(np.full((2, 3), 0.5), ["a", "b"], ["a", "b", "<pad>"],
                            title="<b>x</b>", masked=mask)
    assert np.isnan(np.asarray(fig.data[0].z)[:, 2]).all()
    assert fig.layout.title.text == "&lt;b&gt;x&lt;/b&gt;"


def test_heatmap_shape_mismatch_says_what_was_expected():
    with pytest.raises(ValueError, match=r"\[len\(q_tokens\), len\(k_tokens\)\] = \[3, 3\]"):
        attention_heatmap(np.ones((3, 4)), list("abc"), list("abc"))
    with pytest.raises(ValueError, match="square"):
        attention_heatmap(np.ones((2, 3)), list("ab"), list("abc"), causal=True)
    with pytest.raises(ValueError, match="2 dimensions"):
        attention_heatmap(np.ones((2, 2, 2)), list("ab"), list("ab"))


def test_long_heatmap_hides_ticks_but_keeps_hover_labels():
    n = TICK_LABEL_LIMIT + 10
    tokens = [f"w{i}" for i in range(n)]
    fig = attention_heatmap(_rows((n, n)), tokens, tokens)
    assert fig.layout.xaxis.showticklabels is False and fig.layout.yaxis.showticklabels is False
    assert list(fig.data[0].x) == axis_labels(tokens)
    short = attention_heatmap(_rows((3, 3)), list("abc"), list("abc"))
    assert short.layout.xaxis.showticklabels is True


def _plot_px(fig) -> tuple[float, float]:
    """The plot's width and height inside the margins the figure asks for."""
    m = fig.layout.margin
    return fig.layout.width - m.l - m.r, fig.layout.height - m.t - m.b


def test_short_heatmap_is_sized_to_its_tokens_with_square_cells():
    tokens = ["[CLS]"] + "the cat sat on the mat because it was warm .".split() + ["[SEP]"]
    fig = attention_heatmap(_rows((13, 13)), tokens, tokens)
    w, h = _plot_px(fig)
    assert w >= 400 and abs(w - h) <= 1  # a big plot, square cells
    assert fig.layout.margin.r <= 110  # the colour bar right beside the plot
    assert fig.layout.yaxis.scaleanchor is None  # squeezed by a narrow screen: no blank band
    longer = attention_heatmap(_rows((30, 30)), [f"w{i}" for i in range(30)],
                               [f"w{i}" for i in range(30)])
    assert _plot_px(longer)[0] > w  # more tokens, a bigger plot ...
    long = attention_heatmap(_rows((400, 400)), ["w"] * 400, ["w"] * 400)
    assert _plot_px(long)[0] <= 720  # ... up to a limit
    half = attention_heatmap(_rows((13, 13)), tokens, tokens, max_width=460)
    assert half.layout.width <= 460 and _plot_px(half)[0] == pytest.approx(_plot_px(half)[1], 1)


def test_heatmap_subtitle_is_wrapped_and_the_top_margin_fits_its_lines():
    peaked = np.tril(_rows((4, 4)))
    peaked[0, 0] = 1.0  # colours 0 to 1: no "colours stretched" clause in the subtitle
    fig = attention_heatmap(peaked, list("abcd"), list("abcd"), causal=True)
    lines = fig.layout.title.subtitle.text.split("<br>")
    assert len(lines) == 2 and all(len(html.unescape(line)) <= 60 for line in lines)
    assert lines[1] == "grey = masked (causal)"  # broken between clauses, not inside one
    one = attention_heatmap(np.eye(4), list("abcd"), list("abcd"))  # one line, not stretched
    assert fig.layout.margin.t >= one.layout.margin.t


def test_qk_figure_leaves_room_for_its_titles_above_the_rows():
    fig = qk_figure(_breakdown(), ["x", "<y>", "z"])
    domains = {fig.layout[f"yaxis{n}"].domain for n in ("", "2")}
    (k_low, k_high), (q_low, q_high) = sorted(domains)
    gap_px = (q_low - k_high) * (fig.layout.height - fig.layout.margin.t - fig.layout.margin.b)
    assert gap_px >= 30  # the "key vectors K" and bar titles sit in this gap, not on a row
    titles = {a.text: a.y for a in fig.layout.annotations}
    assert titles["key vectors K<br>(a row per key)"] == pytest.approx(k_high)
    assert titles["query vector q"] == pytest.approx(q_high)


def test_snapshot_grid_labels_every_token():
    tokens = list("abcab")
    fig = snapshot_grid(np.tile(np.eye(5, dtype=np.float32), (3, 1, 1)), tokens, tokens, "t")
    assert list(fig.layout.xaxis.ticktext) == tokens  # repeats stay apart: ticks are positions
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    assert fig.layout.xaxis.showticklabels and fig.layout.yaxis.showticklabels
    assert "query 3·a → key 0·a" == fig.data[0].customdata[3][0]
    wide = snapshot_grid(np.full((1, 2, 2), 0.5, np.float32), ["<b>", "x"], ["<b>", "x"], "t")
    assert list(wide.layout.yaxis.ticktext) == ["&lt;b&gt;", "x"]


# ------------------------------------------------------------------------------- overview
def _png_pixels(fig) -> np.ndarray:
    Image = pytest.importorskip("PIL.Image")
    data = fig.data[0].source.split(",", 1)[1]
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert image.mode == "P"
    return np.asarray(image)


def test_overview_at_512_tokens_is_one_small_image():
    a = _rows((6, 12, 512, 512))
    fig = head_overview(a)
    size = len(fig.to_json())
    assert size < 2_000_000, size
    assert [t.type for t in fig.data] == ["image", "scatter", "scatter"]
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"
    assert _png_pixels(fig).shape == (6 * 66 - 2, 12 * 66 - 2)  # 64-pixel tiles, 2-pixel gaps
    # The worst case for compression: 64 tokens of noise, shown pixel for pixel.
    noisy = head_overview(RNG.random((6, 12, 64, 64), dtype=np.float32))
    assert len(noisy.to_json()) < 2_000_000


def test_overview_click_metadata_points_at_that_heads_thumbnail():
    n_layers, n_heads = 3, 5
    values = (np.arange(n_layers * n_heads).reshape(n_layers, n_heads) + 1) / 16
    a = np.broadcast_to(values[:, :, None, None], (n_layers, n_heads, 10, 10))
    fig = head_overview(a)
    pixels = _png_pixels(fig)
    overlay = fig.data[1]
    assert len(overlay.customdata) == n_layers * n_heads
    for (layer, head), x, y in zip(overlay.customdata, overlay.x, overlay.y):
        expected = round(values[layer, head] * (N_LEVELS - 1))
        assert pixels[int(y), int(x)] == expected, (layer, head)
    assert sorted(map(tuple, overlay.customdata)) == [
        (l, h) for l in range(n_layers) for h in range(n_heads)]
    assert fig.layout.clickmode == "event+select"


def test_overview_downsamples_by_block_max():
    a = np.zeros((1, 1, 128, 128), np.float32)
    a[0, 0, 5, 7] = 1.0  # one strong cell survives a 2×2 block max
    pixels = _png_pixels(head_overview(a))
    assert pixels.shape == (64, 64)
    assert pixels[2, 3] == N_LEVELS - 1 and pixels.sum() == N_LEVELS - 1


def test_overview_block_max_skips_nan_and_blank_blocks_are_zero():
    a = np.full((1, 1, 128, 128), np.nan, np.float32)
    a[0, 0, :64, :64] = 0.0
    a[0, 0, 10, 11] = 0.5  # a NaN neighbour in its 2×2 block must not hide it
    a[0, 0, 11, 10] = np.nan
    thumbs = block_max(a, 64)
    assert thumbs[0, 0, 5, 5] == 0.5 and np.isnan(thumbs[0, 0, 40, 40])
    pixels = _png_pixels(head_overview(a))
    assert pixels[5, 5] == round(0.5 * (N_LEVELS - 1))
    assert pixels[40, 40] == 0  # an all-NaN block is drawn as weight 0


def test_overview_rejects_wrong_shapes():
    with pytest.raises(ValueError, match="4 dimensions"):
        head_overview(np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="pos, pos"):
        head_overview(np.ones((1, 2, 3, 4)))


# ---------------------------------------------------------------------------------- lines
def test_head_lines_opacity_and_colour_follow_weight_and_head():
    w = np.zeros((2, 3, 3))
    w[0] = [[1, 0, 0], [0.5, 0.5, 0], [0.05, 0.15, 0.8]]
    w[1] = np.eye(3)
    fig = head_lines(w, ["a", "b", "c"], [0, 1])
    lines = [t for t in fig.data if t.mode == "lines"]
    by_head = {}
    for t in lines:
        by_head.setdefault(t.legendgroup, []).append(t)
    assert set(by_head) == {"head 0", "head 1"}
    assert by_head["head 0"][0].line.color != by_head["head 1"][0].line.color
    n_lines = sum(np.isnan(np.asarray(t.y, float)).sum() for t in by_head["head 0"])
    assert n_lines == 6  # six weights of head 0 are above MIN_WEIGHT
    full = [t for t in by_head["head 0"] if t.opacity == 1.0]
    ys = np.asarray(full[0].y, float).reshape(-1, 3)[:, :2]
    assert ys.tolist() == [[0, 0]]  # only query 0 → key 0 has weight 1 in head 0
    texts = [t for t in fig.data if t.mode == "markers+text"]
    assert list(texts[0].text) == ["0·a", "1·b", "2·c"]


def test_head_lines_refuses_long_inputs_and_bad_heads():
    with pytest.raises(ValueError, match="at most 60 tokens"):
        head_lines(np.zeros((1, 61, 61)), [str(i) for i in range(61)], [0])
    with pytest.raises(ValueError, match=r"heads_selected must lie in \[0, 2\)"):
        head_lines(np.zeros((2, 3, 3)), list("abc"), [2])
    with pytest.raises(ValueError, match=r"\[head, 3, 3\]"):
        head_lines(np.zeros((2, 4, 4)), list("abc"), [0])
    empty = head_lines(np.zeros((2, 3, 3)), list("abc"), [])
    assert any("at least one head" in a.text for a in empty.layout.annotations)


# ------------------------------------------------------------------------------------ qk
def _breakdown():
    q = np.array([1.0, -2.0, 0.5, 0.0], np.float32)
    keys = RNG.normal(size=(3, 4)).astype(np.float32)
    qk = keys @ q
    masked = np.array([False, False, True])
    scaled = np.where(masked, -np.inf, qk / 2)
    e = np.exp(scaled - scaled[~masked].max())
    return dict(q=q, keys=keys, qk=qk, scaled=scaled, softmax=e / e.sum(), masked=masked,
                layer=1, head=3, kv_head=1, query_pos=1)


def test_qk_figure_shows_the_breakdown():
    b = _breakdown()
    fig = qk_figure(b, ["x", "<y>", "z"])
    bars = [t for t in fig.data if t.type == "bar"]
    np.testing.assert_allclose(np.asarray(bars[0].x), b["qk"])
    np.testing.assert_allclose(np.asarray(bars[2].x), b["softmax"])
    scaled = np.asarray(bars[1].x, float)
    assert np.isnan(scaled[2]) and scaled[0] == pytest.approx(b["qk"][0] / 2)
    marks = [t for t in fig.data if t.name == "masked"]
    assert list(marks[0].y) == ["2·z"]
    heat = [t for t in fig.data if t.type == "heatmap"]
    np.testing.assert_array_equal(np.asarray(heat[0].z)[0], b["q"])
    np.testing.assert_array_equal(np.asarray(heat[1].z), b["keys"])
    assert list(heat[1].y) == ["0·x", "1·&lt;y&gt;", "2·z"]
    assert "k/v head 1" in fig.layout.title.subtitle.text


def test_qk_figure_checks_shapes():
    with pytest.raises(ValueError, match="3 keys but 2 tokens"):
        qk_figure(_breakdown(), ["a", "b"])
    bad = dict(_breakdown(), q=np.zeros(5))
    with pytest.raises(ValueError, match=r"q must be \[d_head\] = \[4\]"):
        qk_figure(bad, list("abc"))


# -------------------------------------------------------------------------------- export
def test_matrix_csv_has_key_header_and_neutralises_formulas():
    m = np.array([[0.25, 0.75], [1.0, 0.0]])
    text = matrix_csv(m, ["=HYPERLINK(\"x\")", "@cmd"], ["+1", "a,b"])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["query \\ key", "'+1", "a,b"]
    assert rows[1][0] == "'=HYPERLINK(\"x\")" and rows[2][0] == "'@cmd"
    assert [float(v) for v in rows[1][1:]] == [0.25, 0.75]
    labels = axis_labels(["<s>", "-x"])
    rows = list(csv.reader(io.StringIO(matrix_csv(np.eye(2), labels, labels))))
    assert rows[0][1:] == ["0·<s>", "1·-x"]  # plain text, no HTML entities
    with pytest.raises(ValueError, match=r"\[2, 2\]"):
        matrix_csv(np.eye(3), labels, labels)


def test_plotly_config_exports_png_or_svg():
    assert PLOTLY_CONFIG["toImageButtonOptions"]["format"] == "png"
    assert plotly_config("svg")["toImageButtonOptions"]["format"] == "svg"
    assert "toImage" in plotly_config("svg")["modeBarButtonsToAdd"]
    with pytest.raises(ValueError, match="fmt"):
        plotly_config("pdf")


def test_trace_npz_round_trips_without_pickle():
    cfg = TransformerConfig(family="gpt2", d_model=8, n_heads=2, n_layers=1, n_ctx=8,
                            d_vocab=10, d_mlp=16)
    pattern = torch.softmax(torch.randn(1, 2, 3, 3), -1)
    resid = torch.randn(1, 3, 8)
    trace = Trace(
        model_name="tiny", cfg=cfg, batch_tokens=[["<s>", "Ġhi", "!"]],
        input_ids=torch.tensor([[0, 4, 5]]), attention_mask=torch.ones(1, 3, dtype=torch.long),
        token_type_ids=torch.zeros(1, 3, dtype=torch.long),
        special_mask=torch.tensor([[1, 0, 0]]), dropped=[0], batched=False,
        cache={"blocks.0.attn.hook_pattern": pattern, "blocks.0.hook_resid_pre": resid,
               "blocks.0.hook_resid_post": resid + 1},
    )
    data = np.load(io.BytesIO(trace_npz(trace)), allow_pickle=False)
    assert data["tokens"].tolist() == ["<s>", "Ġhi", "!"]
    assert data["token_ids"].tolist() == [0, 4, 5]
    np.testing.assert_allclose(data["attentions"], pattern[0][None].numpy())
    assert data["hidden_states"].shape == (2, 3, 8)
    assert json.loads(str(data["config_json"]))["n_heads"] == 2


