"""AppTest for the positional-encoding and embedding pages: the real app script, driven by
widget keys, checking that the numbers on screen are the model's own tensors."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from analysis.positions import sinusoidal_table  # noqa: E402
from model.registry import BUNDLED  # noqa: E402
from chart_data import chart_specs as _charts  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
OTHER = "Other: local directory or hub id"


def _page(page: str, model_dir: Path | None = None, text: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    if model_dir is not None:
        at.selectbox(key="sb_model_choice").set_value(OTHER).run()
        at.text_input(key="sb_model_other").input(str(model_dir)).run()
    if text is not None:
        at.text_area(key="sb_text").input(text).run()
    switch(at, page).run()
    assert not at.exception
    return at



def _array(value) -> np.ndarray:
    """A plotly array as sent to the browser: a typed-array dict ({dtype, bdata, shape}) or
    a plain list."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(arr))).split(",")]
        return arr.reshape(shape)
    return np.asarray(value)


def _checkpoint(name: str) -> np.ndarray:
    """A tensor straight from the bundled MiniLM file, independent of our model code."""
    from safetensors import safe_open

    with safe_open(str(BUNDLED["minilm"]() / "model.safetensors"), "np") as f:
        return f.get_tensor(name)


def _shown_trace(at: AppTest):
    """The very trace the page drew (from the app's own cache, so no second run)."""
    from ui.cache import get_trace

    return get_trace("minilm", at.text_area(key="sb_text").value, "")


def _set(at: AppTest, kind: str, key: str, value) -> None:
    getattr(at, kind)(key=key).set_value(value).run()
    assert not at.exception, (key, value, [e.value for e in at.exception])


# ------------------------------------------------------------------------ positions
def test_positions_page_shows_the_formula_and_the_real_weight():
    at = _page("positions")
    charts = _charts(at)
    weight = _checkpoint("embeddings.position_embeddings.weight")  # [512, 384]
    shown = _array(charts["pos_model_heatmap"]["data"][0]["z"])
    assert shown.shape == (128, 384) and np.array_equal(shown, weight[:128])
    sin = _array(charts["pos_sin_heatmap"]["data"][0]["z"])
    np.testing.assert_allclose(sin, sinusoidal_table(128, 384).numpy(), atol=0)
    pos, dim = np.meshgrid(np.arange(128), np.arange(384), indexing="ij")
    angle = pos / 10000 ** (2 * (dim // 2) / 384)
    np.testing.assert_allclose(sin, np.where(dim % 2 == 0, np.sin(angle), np.cos(angle)),
                               atol=1e-6)
    table = at.table[0].value
    assert "512 × 384 = 196,608" in table.iloc[0, 1]

    _set(at, "slider", "pos_n_positions", 40)
    _set(at, "slider", "pos_d_model", 64)
    charts = _charts(at)
    assert np.array_equal(_array(charts["pos_model_heatmap"]["data"][0]["z"]), weight[:40])
    assert _array(charts["pos_sin_heatmap"]["data"][0]["z"]).shape == (40, 64)
    _set(at, "slider", "pos_n_curves", 6)
    _set(at, "slider", "pos_dims", (8, 20))
    curves = _charts(at)["pos_sin_curves"]["data"]
    assert len(curves) == 6 and curves[0]["name"].startswith("dim 8 ")
    _set(at, "toggle", "pos_grouped", True)
    assert _charts(at)["pos_sin_heatmap"]["data"][0]["x"][:3] == ["0", "2", "4"]
    _set(at, "toggle", "pos_skip_first", False)
    assert _array(_charts(at)["pos_model_pca"]["data"][0]["customdata"])[0] == 0
    _set(at, "toggle", "pos_pca_3d", True)
    assert _charts(at)["pos_model_pca"]["data"][0]["type"] == "scatter3d"
    _set(at, "radio", "pos_similarity", "dot")
    dot = _array(_charts(at)["pos_model_sim"]["data"][0]["z"])
    w = weight[:40].astype(np.float64)
    np.testing.assert_allclose(dot, w @ w.T, rtol=1e-6)  # drawn as float32


def test_positions_page_for_a_rotary_model(tmp_path):
    import tiny_models
    from ui.cache import get_model

    llama = tiny_models.make_llama(tmp_path / "llama")
    at = _page("positions", model_dir=llama, text="The cat sat on the mat.")
    charts = _charts(at)
    assert "pos_rotary" in charts
    inv = get_model(str(llama)).model.blocks[0].attn.rotary.inv_freq.numpy()
    rotary_curve = charts["pos_wavelengths"]["data"][1]
    np.testing.assert_allclose(_array(rotary_curve["y"]), 2 * np.pi / inv, rtol=1e-6)
    _set(at, "slider", "pos_layer", 1)
    _set(at, "slider", "pos_head", 3)
    _set(at, "selectbox", "pos_query", 5)
    _set(at, "selectbox", "pos_key", 1)
    note = next(c.value for c in at.caption if "positions apart" in c.value)
    real, curve = re.findall(r"(-?\d+\.\d{4})", note)
    assert "4 positions apart" in note and real == curve


# ------------------------------------------------------------------------- embeddings
def test_embedding_sum_pca_tsne_and_the_bound():
    at = _page("embeddings")
    _set(at, "selectbox", "emb_token", 2)
    rows = _array(_charts(at)["emb_parts"]["data"][0]["z"])  # [part, d_model]
    trace = _shown_trace(at)
    token_id = int(trace.input_ids[0, 2])
    assert np.array_equal(rows[0], _checkpoint("embeddings.word_embeddings.weight")[token_id])
    assert np.array_equal(rows[2], _checkpoint("embeddings.position_embeddings.weight")[2])
    assert rows.shape == (5, 384)
    assert np.array_equal((rows[0] + rows[1]) + rows[2], rows[3])  # the model's own sum
    states = trace.hidden_states.numpy()  # [layer, pos, d_model]
    from sklearn.decomposition import PCA

    flat = states.reshape(-1, 384).astype(np.float64)
    expected = PCA(2).fit_transform(flat).reshape(states.shape[0], -1, 2)[3]  # [pos, 2]
    _set(at, "slider", "emb_layer", 3)
    point = _charts(at)["emb_projection"]["data"][0]
    shown = np.stack([_array(point["x"]), _array(point["y"])], axis=1)
    for j in range(2):  # float32 activations, float64 PCA on both sides
        sign = np.sign(shown[:, j] @ expected[:, j])
        np.testing.assert_allclose(shown[:, j], sign * expected[:, j], atol=1e-4)

    _set(at, "selectbox", "emb_path", 2)
    path = _charts(at)["emb_projection"]["data"][-1]
    assert path["name"].startswith("path of") and len(_array(path["x"])) == 7
    _set(at, "radio", "emb_color", "token")
    assert len(_charts(at)["emb_projection"]["data"]) > 3
    _set(at, "radio", "emb_dims", "3D")
    assert _charts(at)["emb_projection"]["data"][0]["type"] == "scatter3d"
    _set(at, "radio", "emb_fit", "each layer alone")
    _set(at, "radio", "emb_method", "t-SNE")
    assert _charts(at)["emb_projection"]["layout"]["title"]["text"].startswith("t-SNE")
    _set(at, "slider", "emb_qk_layer", 4)
    _set(at, "slider", "emb_qk_head", 7)
    _set(at, "toggle", "emb_qk_balance", True)
    qk = _charts(at)["emb_qk"]
    assert qk["layout"]["title"]["text"].startswith("Layer 4, head 7")

    _set(at, "radio", "emb_method", "UMAP")  # our own UMAP: no package to install
    assert _charts(at)["emb_projection"]["layout"]["title"]["text"].startswith("UMAP")

    _set(at, "radio", "emb_method", "t-SNE")
    _set(at, "radio", "emb_fit", "all layers in one space")
    at.text_area(key="sb_text").input("word " * 400).run()  # 402 tokens x 7 layers
    assert not at.exception
    assert any("limited to 1,500 points" in w.value for w in at.warning)
    assert "emb_projection" not in _charts(at)


def test_umap_with_several_sentences_and_their_bound():
    at = _page("embeddings")
    _set(at, "radio", "emb_source", "Several sentences (one per line)")
    _set(at, "radio", "emb_fit", "each layer alone")
    _set(at, "radio", "emb_method", "UMAP")
    chart = _charts(at)["emb_projection"]
    assert chart["layout"]["title"]["text"].startswith("UMAP")
    _set(at, "radio", "emb_color", "sentence")
    names = [t["name"] for t in _charts(at)["emb_projection"]["data"]]
    assert "sentence 1" in names and "sentence 6" in names
    _set(at, "radio", "emb_method", "PCA")
    at.text_area(key="emb_sentences").input("\n".join(f"line {i}" for i in range(25))).run()
    assert not at.exception
    assert any("first 20 of 25 lines" in w.value for w in at.warning)
    assert "20 lines" in " ".join(c.value for c in at.caption)


# ------------------------------------------------------- words built from the loaded model
def _outside_expanders(at: AppTest) -> str:
    """Every markdown and caption on the page, minus what sits in a (collapsed) expander."""
    hidden = [m.value for e in at.main.expander for m in list(e.markdown) + list(e.caption)]
    shown = [m.value for m in list(at.main.markdown) + list(at.main.caption)]
    for value in hidden:
        shown.remove(value)
    return "\n".join(shown).replace("\\", "")  # as rendered: no Markdown escapes


def _fig_words(spec: dict) -> str:
    """A figure's title and subtitle (its wrapping <br> as spaces) and its annotations."""
    title = spec["layout"].get("title", {})
    words = [str(title.get("text", "")), str(title.get("subtitle", {}).get("text", ""))]
    words += [str(a.get("text", "")) for a in spec["layout"].get("annotations", [])]
    return " ".join(words).replace("<br>", " ")


def _chart_words(at: AppTest) -> str:
    return "\n".join(_fig_words(spec) for spec in _charts(at).values())


def test_embeddings_page_speaks_of_the_loaded_model():
    """tiny-chars: its own width (64), not MiniLM's 384; no hook names; no columns or
    sentences about parts it does not have (token types, LayerNorm after the sum)."""
    at = _page("embeddings")
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    assert not at.exception
    text = _outside_expanders(at)
    assert "Each token's vector (64 numbers for tiny-chars)" in text
    assert "384" not in text and "MiniLM" not in text.split("Where tokens live")[-1]
    assert "hook_" not in text and "embed." not in text
    assert "layer(s)" not in text
    assert "token type id" not in at.dataframe[0].value.columns
    assert "LayerNorm" not in _fig_words(_charts(at)["emb_norms"])
    assert any("embed.hook_sum" in m.value for e in at.main.expander for m in e.markdown)
    # MiniLM: its own width, and its token types and LayerNorm are there
    at.selectbox(key="sb_model_choice").set_value("minilm").run()
    assert "Each token's vector (384 numbers for MiniLM)" in _outside_expanders(at)
    assert "token type id" in at.dataframe[0].value.columns
    assert "LayerNorm" in _fig_words(_charts(at)["emb_norms"])


def test_positions_page_names_tables_in_plain_words():
    at = _page("positions")
    assert "embed." not in _chart_words(at) and "inv_freq" not in _chart_words(at)
    assert "learned weights" in _fig_words(_charts(at)["pos_model_heatmap"])
    assert (_charts(at)["pos_wavelengths"]["layout"]["title"]["text"]
            .startswith("Higher dimensions turn more slowly"))
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    assert not at.exception
    title = _fig_words(_charts(at)["pos_model_heatmap"])
    assert "embed." not in title and "not learned" in title
    _set(at, "slider", "pos_d_model", 32)  # MiniLM's 384 stays until changed
    assert "set the width slider to 64 and both sides match" in _outside_expanders(at)
    _set(at, "slider", "pos_d_model", 64)
    assert "uses exactly this formula, so both sides match" in _outside_expanders(at)
    decay = _charts(at)["pos_decay"]["data"]  # the two equal curves: the second one dashed
    assert decay[0]["line"].get("dash", "solid") == "solid" and decay[1]["line"]["dash"] == "dash"


def test_positions_page_says_when_the_models_neighbours_are_not_alike():
    """tiny-induction learned positions from random symbols: its neighbours are as unlike as
    far positions, and the caption under the distance curves says so instead of claiming they
    are most alike; MiniLM's do fall with distance, and the page says that."""
    from page_links import open_page, page_text

    at = open_page("positions", "tiny-induction", "abcabc")
    said = page_text(at, kinds=("caption",))
    assert "In tiny-induction's table, neighbours are about as unlike" in said, said
    at = open_page("positions", "minilm", "The cat sat.")
    said = page_text(at, kinds=("caption",))
    assert "about as unlike" not in said and "Near it, positions are most alike" in said
    cells = " ".join(str(v) for t in at.table for v in t.value.to_numpy().ravel())
    assert "before the first layer" in cells and "block 0" not in cells  # plain words
