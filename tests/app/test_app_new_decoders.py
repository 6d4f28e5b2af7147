"""AppTest with saved random-weight folders of the decoder families added for issue 28: every
page opens without an exception or an error on every family; with GPT-NeoX (parallel attention,
partial rotary) and Gemma 2 (soft-capping, sandwich norms, alternating sliding windows),
/attention greys the keys beyond a sliding window and /generate writes what the engine writes."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_link  # noqa: E402

import tiny_decoders  # noqa: E402
from analysis.generation import generate_ids  # noqa: E402
from chart_data import chart_specs, plotly_array  # noqa: E402

TEXT = "Attention lets every token look at every other token."
PAGES = ["attention", "generate", "heads", "compare", "ablation", "logit_lens", "walkthrough",
         "positions", "embeddings", "attribution", "patching", "effect"]


def _app(family: str, page: str, **params) -> AppTest:
    return open_link(page, model=tiny_decoders.saved(family), text=TEXT, **params)


@pytest.mark.parametrize("family", sorted(tiny_decoders.BUILDERS))
@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_clean(family, page):
    at = _app(family, page)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("layer, sliding", [(0, True), (1, False)])
def test_attention_greys_the_keys_beyond_gemma2s_window(layer, sliding):
    at = _app("gemma2", "attention", layer=layer, head=0)
    assert not at.exception, [e.value for e in at.exception]
    z = plotly_array(chart_specs(at)["attn_heatmap"]["data"][0]["z"])  # [q, k]
    n, window = z.shape[0], tiny_decoders.WINDOW
    q, k = np.indices(z.shape)
    assert np.isnan(z[q < k]).all()  # causal, on every layer
    assert np.isnan(z[q - k >= window]).all() == sliding
    assert np.isfinite(z[(q >= k) & (q - k < window)]).all()
    caption = " ".join(str(c.value) for c in at.caption)
    assert ("sliding window" in caption) == sliding and n > window


@pytest.mark.parametrize("family", ["neox", "gemma2"])
def test_generate_writes_what_the_engine_writes(family):
    lm, _ = tiny_decoders.loaded(family)
    at = _app(family, "generate")
    assert not at.exception, [e.value for e in at.exception]
    n_new = at.slider(key="gen_n").value
    engine = generate_ids(lm, lm.run(TEXT).token_ids.reshape(-1).tolist(), n_new)
    assert " ".join(str(c.value) for c in at.code) == lm.tokenizer.decode(engine.ids)
