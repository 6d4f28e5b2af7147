"""AppTest with saved random-weight folders of the decoder families added for issue 28: every
page opens without an exception or an error on every family; with GPT-NeoX (parallel attention,
partial rotary) and Gemma 2 (soft-capping, sandwich norms, alternating sliding windows),
/attention greys the keys beyond a sliding window and /generate writes what the engine writes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

import tiny_decoders  # noqa: E402
from analysis.generation import generate_ids  # noqa: E402
from chart_data import chart_specs, plotly_array  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TEXT = "Attention lets every token look at every other token."
PAGES = ["attention", "generate", "heads", "compare", "ablation", "logit_lens", "walkthrough",
         "positions", "embeddings", "attribution", "patching", "effect"]


def _app(family: str, page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = str(tiny_decoders.saved(family))
    at.query_params["text"] = TEXT
    for key, value in params.items():
        at.query_params[key] = str(value)
    switch(at, page)
    at.run()
    return at


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
