"""AppTest of the training page: bounds on screen, a short run in the background thread,
snapshots over training time, downloads, stop, reset, your own text, the encoder-decoder."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from model.registry import OWN_MODELS
from server.training_runs import SAVE_PREFIX

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_files import page_names  # noqa: E402
from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "training"


@pytest.fixture(autouse=True)
def _remove_saved_models():
    """Every run saves its model to a temporary directory; remove the ones tests made."""
    before = set(Path(tempfile.gettempdir()).glob(SAVE_PREFIX + "*"))
    yield
    for path in set(Path(tempfile.gettempdir()).glob(SAVE_PREFIX + "*")) - before:
        shutil.rmtree(path, ignore_errors=True)


def _page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    return switch(at, PAGE).run()


def _train(at: AppTest, task: str = "induction", steps: int = 50, **size) -> AppTest:
    at.selectbox(key="train_task").set_value(task).run()
    at.slider(key="train_layers").set_value(size.get("layers", 2))
    at.select_slider(key="train_heads").set_value(size.get("heads", 2))
    at.select_slider(key="train_d_model").set_value(size.get("d_model", 16))
    at.slider(key="train_steps").set_value(steps)
    at.select_slider(key="train_every").set_value(10).run()
    at.button(key="train_start").click().run()
    assert not at.exception
    run = at.session_state["train_run"]
    run.thread.join(60)
    return at.run()


def _values(array) -> list:
    """A plotly array from the figure JSON: a list, or {"bdata": base64, "dtype": ...}."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def _title(at: AppTest, key: str) -> str:
    """The figure's title without its second (explanatory) line."""
    return _figure(at, key)["layout"]["title"]["text"].split("<br>")[0]


def _figure(at: AppTest, key: str) -> dict:
    charts = {el.key: json.loads(el.proto.spec) for el in at.get("plotly_chart")}
    return charts[key]


def test_page_states_its_bounds_and_starts_with_the_recipe_size():
    at = _page()
    assert not at.exception
    intro = at.caption[0]
    assert "Start training" in intro.value and "layers" not in intro.value  # plain words first
    bounds = intro.proto.help  # the server's limits sit in its help tooltip
    assert "at most 4 layers" in bounds and "180 seconds" in bounds and "One run" in bounds
    assert at.slider(key="train_layers").value == 2 and at.select_slider(
        key="train_d_model").value == 64
    at.selectbox(key="train_task").set_value("reverse").run()
    assert at.slider(key="train_steps").value == 800


def test_a_short_run_shows_loss_snapshots_and_downloads():
    at = _train(_page(), steps=50)
    run = at.session_state["train_run"]
    assert run.view()[0] == "done"
    loss = _figure(at, "train_loss")
    assert len(_values(loss["data"][0]["y"])) == 50  # one point per step
    assert any("induction score" in t["name"] for t in loss["data"])
    assert at.toggle(key="train_follow").value is False  # finished: the time slider shows
    snap = at.select_slider(key="train_snap")
    assert snap.options == [f"step {s}" for s in range(0, 51, 10)] and snap.value == 5
    grid = _figure(at, "train_snapshot")
    assert _title(at, "train_snapshot").endswith("step 50") and len(grid["data"]) == 2
    at.select_slider(key="train_snap").set_value(0).run()
    assert _title(at, "train_snapshot").endswith("step 0")
    downloads = {b.key for b in at.get("download_button")}
    assert downloads == {"train_zip", "train_safetensors"}
    path = Path(run.save_dir)
    assert (path / "model.safetensors").is_file()
    at.button(key="train_reset").click().run()
    assert "train_run" not in at.session_state and not path.exists()


def test_stop_ends_a_long_run_early():
    at = _page()
    at.slider(key="train_steps").set_value(3000).run()
    at.button(key="train_start").click().run()
    at.button(key="train_stop").click().run()
    run = at.session_state["train_run"]
    run.thread.join(60)
    at.run()
    assert not at.exception
    assert run.view()[0] == "stopped" and len(run.view()[1]) < 3000
    assert "stopped" in at.get("progress")[0].proto.text


def test_own_text_too_short_gives_a_message_then_trains():
    at = _page()
    at.selectbox(key="train_task").set_value("own").run()
    at.text_area(key="train_text").input("<script>alert(1)</script> **short**").run()
    at.button(key="train_start").click().run()
    assert not at.exception and any("at least 400" in e.value for e in at.error)
    assert "train_run" not in at.session_state
    at.text_area(key="train_text").input("<b>Tiny</b> $x$ [link](http://x) text. " * 15).run()
    at = _train(at, "own", steps=50)
    grid = _figure(at, "train_snapshot")
    rows = grid["layout"]["yaxis"]["ticktext"]  # the tokens, one tick per position
    keys = grid["layout"]["xaxis"]["ticktext"]  # thinned when the page would narrow the grid
    assert "&lt;" in "".join(rows) and not any("<" in t for t in rows + keys)  # escaped labels
    at.button(key="train_write").click().run()
    assert not at.exception and len(at.code[0].value) > 200


def test_reversal_run_shows_cross_attention_and_reverses_a_word():
    at = _train(_page(), "reverse", steps=50)
    assert not at.exception
    title = _title(at, "train_snapshot")
    assert title.startswith("Cross-attention")
    grid = _figure(at, "train_snapshot")
    rows = grid["layout"]["yaxis"]["ticktext"]
    assert rows[0] == "^→x"  # the probe "softmax", reversed, read from BOS
    assert grid["data"][0]["customdata"][0][0].startswith("query 0·^→x → key 0·")
    at.text_input(key="train_word").input("abc").run()
    assert not at.exception and at.code[0].value.startswith("abc → ")


def test_trained_model_opens_in_the_attention_page():
    at = _train(_page(), "chars", steps=50)
    path = str(at.session_state["train_run"].save_dir)
    assert at.session_state["trained_models"]["trained: chars"] == path
    at.button(key="train_use").click().run()
    assert not at.exception
    assert at.session_state["sb_model_choice"] == "trained: chars"  # listed in the sidebar
    assert "trained: chars" in at.selectbox(key="sb_model_choice").options
    heatmap = _figure(at, "attn_heatmap")
    assert heatmap["data"][0]["x"][0] == "0·T"  # one token per character: "The cat…"
    shown = " ".join(c.value for c in at.main.caption)  # the page names it, not its folder
    assert "trained: chars:" in shown and path not in shown and "/tmp" not in shown
    switch(at, "positions").run()
    texts = " ".join(m.value for m in at.main.markdown)
    assert not at.exception and "trained\\: chars" in texts and path not in texts  # escaped


def test_hosted_session_can_open_its_own_trained_model_but_no_other_path(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    import streamlit as st

    before = st.get_option("client.showErrorDetails")
    try:
        at = _train(_page(), "chars", steps=50)
        at.button(key="train_use").click().run()
        assert not at.exception
        assert _figure(at, "attn_heatmap")["data"][0]["x"][0] == "0·T"
        from server import settings
        assert settings.model_refusal(str(at.session_state["train_run"].save_dir))  # others: no
    finally:
        st.set_option("client.showErrorDetails", before)


@pytest.mark.parametrize("name", OWN_MODELS)
def test_shipped_models_open_in_every_page(name):
    """Each shipped model (the encoder-decoder too) runs in every page of the app."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["model"] = name
    at.query_params["text"] = "abcdefgabcdefg"
    at.run()
    pages = page_names()
    assert "attention" in pages
    for page in pages:
        if page != "training":
            switch(at, page).run()
            assert not at.exception, (name, page, [e.value for e in at.exception])
            assert at.session_state["selection"].model.name == name


def test_one_layer_one_head_model_trains_and_opens_like_seed_004():
    at = _train(_page(), "chars", steps=50, layers=1, heads=1)
    assert not at.exception
    assert at.session_state["train_run"].view()[0] != "running"
    at.button(key="train_use").click().run()
    assert not at.exception
    heatmap = _figure(at, "attn_heatmap")
    assert heatmap["layout"]["title"]["text"].lower().startswith("layer 0, head 0")
    assert any("only one" in c.value for c in at.caption)


def test_reset_forgets_the_trained_model_everywhere():
    """Reset deletes the model's folder, so the sidebar no longer offers it."""
    at = _train(_page(), "chars", steps=50)
    path = Path(at.session_state["train_run"].save_dir)
    at.button(key="train_use").click().run()
    assert at.session_state["sb_model_choice"] == "trained: chars"
    switch(at, PAGE).run()
    at.button(key="train_reset").click().run()
    assert not at.exception and not path.exists()
    assert "trained: chars" not in at.session_state["trained_models"]
    choice = at.selectbox(key="sb_model_choice")
    assert "trained: chars" not in choice.options and choice.value != "trained: chars"
    assert at.session_state["selection"].model is not None  # the default model, loaded
