"""AppTest with saved random-weight BART and T5 folders (tests/tiny_seq2seq.py): /attention
opens clean and draws the decoder's cross-attention over the source, as for tiny-reverse; and
the positions page's section for T5's relative position bias (app_pages/positions/relative.py) draws
HF's numbers for either stack."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

import tiny_seq2seq  # noqa: E402
from analysis.positions import relative_bias  # noqa: E402
from chart_data import chart_specs, plotly_array  # noqa: E402
from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TEXT = "Attention lets every token look at every other token."


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_attention_page_shows_cross_attention(family):
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = str(tiny_seq2seq.folder(family))
    at.query_params["text"] = TEXT
    switch(at, "attention").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    specs = chart_specs(at)
    assert "attn_heatmap" in specs and "attn_cross" in specs
    lm, _ = tiny_seq2seq.loaded(family)
    trace = lm.run(TEXT)
    z = plotly_array(specs["attn_cross"]["data"][0]["z"])  # [out_pos, src_pos], last layer
    assert z.shape == (len(trace.decoder_tokens[0]), len(trace.tokens))
    dec = trace.dec_cfg
    expected = trace.cross_attentions[dec.n_layers - 1, 0].numpy()  # the default: head 0
    assert np.allclose(z, expected, atol=1e-3)  # a picture of the model's own numbers
    assert at.slider(key="attn_cross_layer").max == dec.n_layers - 1


def _section(model_dir: str, decoder: bool) -> None:
    import streamlit as st

    from model.loading import load_model
    from app_pages.positions.relative import SIDES, show_relative_bias

    st.session_state.setdefault("pos_rel_side", SIDES[int(decoder)])
    show_relative_bias(load_model(model_dir, device="cpu"))


@pytest.mark.parametrize("decoder", [False, True])
def test_positions_section_draws_t5s_bias(decoder):
    folder = str(tiny_seq2seq.folder("t5"))
    at = AppTest.from_function(_section, args=(folder, decoder), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    heat = chart_specs(at)["pos_rel_bias"]["data"][0]
    lm, _ = tiny_seq2seq.loaded("t5")
    distances, bias = relative_bias(lm.model, decoder=decoder)
    assert np.allclose(plotly_array(heat["z"]), bias.numpy(), atol=1e-6)
    assert plotly_array(heat["x"]).tolist() == distances.tolist()


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_the_positions_page_opens_on_each_family(family):
    """T5 gets its bias by distance instead of a position table; BART keeps its table."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = str(tiny_seq2seq.folder(family))
    at.query_params["text"] = TEXT
    switch(at, "positions").run()
    assert not at.exception, [e.value for e in at.exception]
    assert ("pos_rel_bias" in chart_specs(at)) == (family == "t5")
