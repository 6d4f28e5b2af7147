"""A user's own model can be as small as one layer with one head: every page still works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_files import page_names  # noqa: E402
from page_links import switch  # noqa: E402

from tiny_models import make_llama  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PAGES = [p for p in page_names() if p != "training"]


@pytest.fixture(scope="module")
def one_by_one(tmp_path_factory) -> Path:
    return make_llama(tmp_path_factory.mktemp("one") / "llama",
                      num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1)


@pytest.mark.parametrize("page", PAGES)
def test_one_layer_one_head_model_works_on_every_page(one_by_one, page):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["model"] = str(one_by_one)
    at.query_params["text"] = "A small model with one head."
    at.run()
    switch(at, page).run()
    assert not at.exception, (page, at.exception)
    assert not [e.value for e in at.sidebar.error]
    if page in ("attention", "compare", "walkthrough"):
        shown = " ".join(c.value for c in at.caption)
        assert "this model has only one" in shown
