"""Review 8c on the heads page: the table's example head ("L5 H6") did not exist in
tiny-chars (2 layers of 4 heads); the entropy formula broke across two lines."""

from __future__ import annotations

import os
import re
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_the_example_head_is_one_the_model_has():
    from model import load_model

    cfg = load_model("tiny-chars").cfg
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = "tiny-chars"
    at.query_params["text"] = "The cat sat on the mat."
    at.run()
    at.switch_page("app_pages/heads.py").run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    found = re.findall(r"Head “L(\d+) H(\d+)”: layer (\d+), head (\d+)", captions)
    assert found, captions
    for lay, head, lay2, head2 in found:
        assert lay == lay2 and head == head2
        assert int(lay) < cfg.n_layers and int(head) < cfg.n_heads
    # the entropy formula is one unbreakable KaTeX group: "${H_i = ...}$"
    assert at.selectbox(key="hs_stat").value == "entropy"
    text = " ".join(m.value for m in at.markdown)
    assert "${H_i = " in text and "$H_i = " not in text.replace("${H_i", "")
