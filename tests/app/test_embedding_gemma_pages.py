"""EmbeddingGemma's layout (Gemma 3 with use_bidirectional_attention, Gemma3TextModel) in the
app: every page opens without an exception or an error and calls it a model that reads text,
and /attention shows every key both
ways on a full layer and greys only the keys beyond the two-sided window on a sliding one."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_link  # noqa: E402

import tiny_decoders  # noqa: E402
from chart_data import chart_specs, plotly_array  # noqa: E402

TEXT = "Attention lets every token look at every other token."
PAGES = ["attention", "generate", "heads", "compare", "ablation", "logit_lens", "walkthrough",
         "positions", "embeddings", "attribution", "patching", "effect"]


def _app(page: str, **params) -> AppTest:
    return open_link(page, model=tiny_decoders.saved("embedding_gemma"), text=TEXT, **params)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_clean(page):
    at = _app(page)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    about = [str(c.value) for c in at.sidebar.caption if str(c.value).startswith("It ")]
    assert about and about[0].startswith("It reads text (encoder)")  # not a decoder


@pytest.mark.parametrize("layer, sliding", [(0, True), (1, False)])
def test_attention_looks_both_ways_and_greys_only_beyond_the_window(layer, sliding):
    at = _app("attention", layer=layer, head=0)
    assert not at.exception, [e.value for e in at.exception]
    z = plotly_array(chart_specs(at)["attn_heatmap"]["data"][0]["z"])  # [q, k]
    window = tiny_decoders.WINDOW + 1  # a window of 2 × WINDOW: WINDOW + 1 each way
    q, k = np.indices(z.shape)
    far = np.abs(q - k) >= window
    assert far.any() and np.isnan(z[far]).all() == sliding
    assert np.isfinite(z[~far]).all()  # later keys too: no causal triangle
    caption = " ".join(str(c.value) for c in at.caption)
    assert ("on either side" in caption) == sliding and "Causal model" not in caption
