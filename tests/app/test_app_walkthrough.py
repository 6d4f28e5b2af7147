"""AppTest: the walkthrough page, walked step by step for an encoder and a decoder.

The expected shapes come from a separate run of the same model in the test process, so the
page must show the shapes of the tensors of the run, step after step.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from model import BUNDLED, load_model  # noqa: E402
from analysis.walkthrough import walkthrough  # noqa: E402
from analysis.walkthrough.table import FULL_PX, PAIR_PX, cell_texts, table_px  # noqa: E402
from ui.examples import SHORT  # noqa: E402
from viz.labels import visible_text  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "walkthrough"
OTHER = "Other: local directory or hub id"
SHAPE = re.compile(r"shape `\[([0-9, ]*)\]`")
# "Preview: the first 6 of 13 positions (rows) × all 4 numbers (columns), for text 1."
PROMISED = re.compile(r"× (?:the first (\d+) of [\d,]+|all (\d+)|(1)) [^(]*\(columns\)")


def _page(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for name, value in params.items():
        at.query_params[name] = str(value)
    switch(at, PAGE)
    return at.run()


def _shown_shapes(at: AppTest) -> list[list[int]]:
    shapes = []
    for md in at.main.markdown:
        match = SHAPE.search(md.value)
        if match:
            shapes.append([int(n) for n in match.group(1).split(",")])
    return shapes


JARGON = ("d_model", "d_head", "d_mlp")
INTERNAL = ("hook_", "trace.", "blocks.", "(s)", "q_pos", "k_pos",
            "batch 0", "heads 0", "[:, 0]")


def _outside_expanders(at: AppTest) -> str:
    """Every markdown and caption of the page, minus what sits in a (collapsed) expander."""
    hidden = [m.value for e in at.main.expander for m in list(e.markdown) + list(e.caption)]
    shown = [m.value for m in list(at.main.markdown) + list(at.main.caption)]
    for value in hidden:
        shown.remove(value)
    return "\n".join(shown)


def _in_expanders(at: AppTest) -> str:
    return "\n".join(m.value for e in at.main.expander for m in e.markdown)


def _check_previews(at: AppTest, key: str) -> None:
    """Every preview table has the number of columns its caption promises, and fits (by the
    grid's width estimate) the narrowest place it can be shown: a whole 800 px page, or one of
    two tables side by side."""
    promised = [PROMISED.search(c.value) for c in at.main.caption
                if c.value.startswith("Preview:")]
    frames = [d.value for d in at.main.dataframe  # the tokens table is no preview: all rows
              if "mask" not in map(str, d.value.columns)]
    assert len(promised) == len(frames) and all(promised), (key, promised)
    budget = PAIR_PX if len(frames) == 2 else FULL_PX
    for match, frame in zip(promised, frames):
        assert int(next(g for g in match.groups() if g)) == frame.shape[1], (key, match[0])
        width = table_px([str(i) for i in frame.index], [str(c) for c in frame.columns],
                         cell_texts(frame.to_numpy()))
        assert width <= budget or frame.shape[1] == 1, (key, width, budget)


def _walk(at: AppTest, steps) -> list[str]:
    """Click Next through every step, checking the title, every shape shown, and that no
    internal name is on screen outside the "for the curious" expander."""
    seen = []
    for number, step in enumerate(steps, 1):
        assert not at.exception, (number, at.exception)
        assert at.selectbox(key="wk_step").value == number
        assert at.main.subheader[0].value == f"{number}. {step.title}"
        assert _shown_shapes(at) == [list(s.shape) for s in step.shown], step.key
        text = _outside_expanders(at)
        assert not [w for w in INTERNAL if w in text], (step.key, text)
        for s in step.shown:  # the exact name is kept for the curious, collapsed
            assert f"`{s.source}`" in _in_expanders(at), step.key
        _check_previews(at, step.key)
        for chart in at.get("plotly_chart"):  # titles and axes in plain words too
            layout = json.dumps(json.loads(chart.proto.spec)["layout"], ensure_ascii=False)
            assert not [w for w in JARGON if w in layout], (step.key, layout)
        seen.append(step.key)
        if number < len(steps):
            at.button(key="wk_next").click().run()
    assert at.button(key="wk_next").disabled
    assert at.query_params["step"] in (str(len(steps)), [str(len(steps))])
    return seen


def _chart(at: AppTest, key: str) -> dict:
    return next(json.loads(el.proto.spec) for el in at.get("plotly_chart") if el.key == key)


def test_encoder_every_step(minilm):
    steps = walkthrough(minilm.run(SHORT, keep=None), 0)
    at = _page()
    assert at.selectbox(key="wk_step").options == [f"{i}. {s.title}" for i, s in enumerate(steps, 1)]
    # Step 11 (split into heads): the preview is the real Q of head 0, first rows and columns.
    q = minilm.run(SHORT, keep=None).cache["blocks.0.attn.hook_q"][0, 0, :6, :8].numpy()
    at.selectbox(key="wk_step").set_value(11).run()
    shown = at.main.dataframe[0].value.to_numpy(dtype=float)  # as many columns as fit
    assert shown.shape[0] == 6 and 4 <= shown.shape[1] < 8
    np.testing.assert_allclose(shown, q[:, :shown.shape[1]], atol=6e-4)  # 3 decimals
    at.selectbox(key="wk_step").set_value(1).run()
    seen = _walk(at, steps)
    assert seen[-1] == "pooler" and "add_norm_attn" in seen  # post-LN order, BERT's end


def test_decoder_every_step(tiny_dirs, tiny_models_loaded):
    path = str(tiny_dirs["gpt2"])
    steps = walkthrough(tiny_models_loaded["gpt2"].run(SHORT, keep=None), 0)
    at = _page()
    at.selectbox(key="sb_model_choice").set_value(OTHER).run()
    at.text_input(key="sb_model_other").input(path).run()
    assert "decoder" in " ".join(c.value for c in at.main.caption)
    seen = _walk(at, steps)
    assert seen[-3:] == ["final_norm", "unembed", "next_token"] and "ln1" in seen
    bars = _chart(at, "wk_fig")["data"][0]
    assert bars["type"] == "bar" and len(bars["y"]) == 10
    # The causal mask step: −∞ above the diagonal of the preview, 0 on and below it.
    at.selectbox(key="wk_step").set_value(steps.index(next(s for s in steps if s.key == "mask")) + 1)
    at.run()
    mask = at.main.dataframe[0].value.to_numpy()
    upper = np.triu(np.ones(mask.shape, dtype=bool), k=1)
    assert (mask[upper] == "−∞").all() and (mask[~upper] != "−∞").all()
    # The logits' columns are named by their tokens, not by vocabulary ids alone.
    at.selectbox(key="wk_step").set_value(steps.index(next(s for s in steps
                                                      if s.key == "unembed")) + 1).run()
    names = tiny_models_loaded["gpt2"].tokenizer.tokens(list(range(3)))  # <|endoftext|>, !, "
    assert list(at.main.dataframe[0].value.columns)[:3] == [
        f"{visible_text(t)} (id {i})" for i, t in enumerate(names)]


def test_second_sentence_as_pair_or_padded_batch(minilm):
    pair = ("I love cats!", "He hates pineapple pizza.")
    at = _page()
    at.text_area(key="sb_text").input(pair[0]).run()
    at.text_input(key="sb_pair").input(pair[1]).run()
    assert not at.exception
    assert _shown_shapes(at) == [list(minilm.run(*pair).input_ids.shape)]  # one pair sequence
    at.toggle(key="wk_batch").set_value(True).run()
    batch = minilm.run(list(pair)).input_ids
    assert _shown_shapes(at) == [list(batch.shape)] and batch.shape[0] == 2
    assert at.query_params["wbatch"] in ("1", ["1"])
    # The mask step for text 1, the shorter one: its padding columns are −∞.
    mask_step = next(i for i, s in enumerate(walkthrough(minilm.run(list(pair), keep=None)), 1)
                     if s.key == "mask")
    at.selectbox(key="wk_step").set_value(mask_step).run()
    length = int(minilm.run(list(pair)).attention_mask[0].sum())
    row = at.main.dataframe[0].value.to_numpy()[0]
    assert list(row[length:]) == ["−∞"] * (len(row) - length) and "−∞" not in list(row[:length])
    at.radio(key="wk_item").set_value(1).run()
    assert "−∞" not in list(at.main.dataframe[0].value.to_numpy()[0])  # the longer text


def test_link_opens_step_layer_and_teacher_notes_and_next_layer_button():
    at = _page(step=13, wlayer=2, teacher=1)
    assert not at.exception
    assert at.selectbox(key="wk_step").value == 13 and at.slider(key="wk_layer").value == 2
    assert "blocks.2.attn.hook_qk" in _in_expanders(at)
    assert "blocks.2" not in _outside_expanders(at)
    assert any("the attention scores (layer 2)" in c.value for c in at.main.caption)
    assert at.main.info and "matrix per head" in at.main.info[0].value  # the teacher text
    at.toggle(key="wk_teacher").set_value(False).run()
    assert not at.main.info
    stack = next(i for i, opt in enumerate(at.selectbox(key="wk_step").options, 1)
                 if "Repeat for all" in opt)
    at.selectbox(key="wk_step").set_value(stack).run()
    at.button(key="wk_next_layer").click().run()
    assert at.slider(key="wk_layer").value == 3
    assert at.main.subheader[0].value.endswith("The layer's input")
    assert at.query_params["wlayer"] in ("3", ["3"])


@pytest.mark.parametrize("text", ["<script>alert(1)</script> **bold** $x$", "日本語 😀 \u200b"])
def test_hostile_text_shows_literally(text):
    at = _page()
    at.text_area(key="sb_text").input(text).run()
    assert not at.exception
    # step 1: the token table, a data frame: it shows text as typed and renders no markup
    table = next(d.value for d in at.dataframe if "mask" in d.value.columns)
    tokens = table["token"].tolist()
    if "script" in text:  # the tokenizer cuts "<script>" into "<", "script", ">"
        assert "<" in tokens and "script" in tokens
    at.selectbox(key="wk_step").set_value(16).run()  # the softmax heatmap, tokens on both axes
    assert not at.exception and _chart(at, "wk_fig")["data"][0]["type"] == "heatmap"


@pytest.mark.parametrize("name", ["tiny-chars", "tiny-reverse"])
def test_models_trained_here_walk_every_step(name):
    """A character-level decoder, and an encoder-decoder whose encoder the steps follow."""
    assert name in BUNDLED and BUNDLED[name]().is_dir()  # shipped in weights/
    steps = walkthrough(load_model(name).run(SHORT, keep=None), 0)
    at = _page(model=name)
    assert at.selectbox(key="sb_model_choice").value == name
    _walk(at, steps)
    assert bool(at.main.info) == (name == "tiny-reverse")  # the encoder-decoder is named so


def test_counts_in_words_and_where_to_go_next():
    """No "text(s)" or "token(s)": real singulars and plurals; the last step ends with links
    to the Attention, Logit lens and Generate pages instead of a dead end."""
    at = _page(model="tiny-chars")
    assert not at.exception
    words = _outside_expanders(at)
    assert "1 text × 43 positions" in words and "2 layers of 4 heads each" in words
    assert "adding no special tokens" in words
    options = at.selectbox(key="wk_step").options
    assert "24. Repeat for both layers" in options and not any("all 2" in o for o in options)
    assert not at.main.get("page_link")  # only on the last step
    at.selectbox(key="wk_step").set_value(len(options)).run()
    assert "Where to go next" in _outside_expanders(at)
    assert [link.proto.page for link in at.main.get("page_link")] == [
        "attention", "logit-lens", "generate"]
    at = _page()  # MiniLM adds [CLS] and [SEP]
    assert "adding 2 special tokens" in _outside_expanders(at)


def test_first_screen_in_plain_words_and_the_gelu_plot_shows_the_bend(minilm):
    """The header and the contents say "numbers per token", not d_model / d_head / d_mlp /
    post-LN. The GELU step plots inputs in [-4, 4] with the function's own line, and its
    caption counts the run's numbers that lie outside, with their extremes."""
    at = _page()
    first = _outside_expanders(at) + "\n".join(at.selectbox(key="wk_step").options)
    for word in ("d_model", "d_head", "d_mlp", "post-LN", "pre-LN"):
        assert word not in first, word
    assert "Each token is a list of 384 numbers" in first and "14. Divide by √32" in first
    steps = walkthrough(minilm.run(SHORT, keep=None), 0)
    number = next(i for i, s in enumerate(steps, 1) if s.key == "mlp_act")
    at.selectbox(key="wk_step").set_value(number).run()
    assert not at.exception
    spec = _chart(at, "wk_fig")
    dots, line = spec["data"]
    assert line["mode"] == "lines" and dots["mode"] == "markers"
    assert spec["layout"]["xaxis"]["range"] == pytest.approx([-4.08, 4.08])
    xs = dots["x"]  # plotly sends arrays as {"dtype", "bdata": base64}
    xs = np.frombuffer(base64.b64decode(xs["bdata"]), xs["dtype"]) if "bdata" in xs else xs
    assert len(xs) > 100 and np.abs(xs).max() <= 4.0
    x = minilm.run(SHORT, keep=None).cache["blocks.0.mlp.hook_pre"][0].flatten()
    below, above = int((x < -4).sum()), int((x > 4).sum())
    assert below + above > 0  # this text has numbers outside the window: the caption says so
    note = next(c.value for c in at.main.caption if "outside the plot" in c.value)
    assert f"Of the {x.numel():,} numbers" in note
    if below:
        assert f"{below:,} below −4 (down to {x.min().item():.1f})" in note
    if above:
        assert f"{above:,} above 4 (up to {x.max().item():.1f})" in note
