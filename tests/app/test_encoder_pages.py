"""AppTest: every page opens clean with a random-weight DistilBERT, XLM-RoBERTa and ELECTRA
folder (tests/tiny_encoders.py), loaded natively: the encoder pages draw their figures, the
decoder-lab pages say why they do not apply, and nothing raises."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

import tiny_encoders  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
DRAWN = ["attention", "effect", "heads", "compare", "ablation", "patching", "walkthrough",
         "positions", "embeddings"]  # pages that draw figures for an encoder
DECODER_ONLY = ["logit_lens", "generate", "attribution"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("encoder_pages")
    return {family: build(root / family) for family, build in tiny_encoders.BUILDERS.items()}


@pytest.mark.parametrize("family", list(tiny_encoders.BUILDERS))
def test_every_page_opens_clean_with_the_family(folders, family):
    at = AppTest.from_file(APP, default_timeout=180)
    switch(at, "attention")
    at.run()
    at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
    at.text_input(key="sb_model_other").input(str(folders[family])).run()
    assert not at.exception and not at.sidebar.error
    heatmap = {el.key: json.loads(el.proto.spec) for el in at.get("plotly_chart")}["attn_heatmap"]
    assert heatmap["data"][0]["type"] == "heatmap"
    assert "2 layers × 3 heads" in " ".join(c.value for c in at.caption)
    assert not any("Hugging Face's own code" in i.value for i in at.sidebar.info)  # native
    for page in DRAWN + DECODER_ONLY:
        switch(at, page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not at.error, (page, [e.value for e in at.error])
        if page == "walkthrough":  # it opens on the tokens table; its figures come later
            assert at.main.dataframe, page
        elif page in DRAWN:
            assert at.get("plotly_chart"), page
        else:
            assert not at.get("plotly_chart") and "encoder" in " ".join(
                m.value for m in list(at.info) + list(at.markdown) + list(at.warning)), page
