"""The decoder lab with saved random-weight T5, BART and Marian folders (tests/tiny_seq2seq.py),
in AppTest: Generate writes from the decoder's start token over the sidebar's text and draws
the newest token's cross-attention over the source; Which parts made the logit shows the
decoder's own logit and the sum of the parts (equal to Hugging Face's logit), and moves to
another position and to a logit difference; Patching takes a corrupted source and says when
its length differs. The numbers on screen are the models' own."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

import tiny_seq2seq  # noqa: E402
from analysis.seq2seq_generation import generate_seq2seq, seq2seq_start, source_window  # noqa
from chart_data import chart_specs, plotly_array  # noqa: E402
from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TEXT = "Attention lets every token look at every other token."


def _open(family: str, path: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = str(tiny_seq2seq.folder(family))
    at.query_params["text"] = TEXT
    for key, value in params.items():
        at.query_params[key] = str(value)
    switch(at, path).run()
    _clean(at)
    return at


def _clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("family", ["t5", "bart", "marian"])
def test_generate_draws_the_decoders_own_cross_attention(family):
    at = _open(family, "generate", gn=5, glayer=1, ghead=2)
    lm, _ = tiny_seq2seq.loaded(family)
    src, _ = source_window(lm, TEXT)
    gen = generate_seq2seq(lm, src, 5, start=seq2seq_start(lm))
    bars = plotly_array(chart_specs(at)["gen_cross"]["data"][0]["y"])
    assert np.allclose(bars, gen.cross[0][1, 2].numpy(), atol=1e-6)
    assert len(bars) == len(gen.source_tokens)
    words = " ".join(e.value for e in at.caption)
    assert "generation_config.json" in words  # the tiny folders have one: said where from
    at.button(key="gen_next").click().run()
    _clean(at)
    assert at.slider(key="gen_step").value == 2
    bars = plotly_array(chart_specs(at)["gen_cross"]["data"][0]["y"])
    assert np.allclose(bars, gen.cross[1][1, 2].numpy(), atol=1e-6)
    at.radio(key="gen_mode").set_value("sample").run()
    _clean(at)
    assert "Top-k cut away" in " ".join(e.value for e in at.caption)


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_attribution_sum_is_the_models_logit(family):
    at = _open(family, "attribution")
    lm, hf = tiny_seq2seq.loaded(family)
    trace = lm.run(TEXT)
    src = trace.token_ids.reshape(-1)[:trace.n_tokens]
    dec = trace.decoder_ids[0]
    with torch.no_grad():
        ref = hf(input_ids=src[None], decoder_input_ids=dec[None]).logits[0].double()

    def shown():
        return {m.label: float(m.value) for m in at.metric if m.label != "Gap"}

    last = dec.numel() - 1
    assert shown()["From the model"] == pytest.approx(float(ref[last].max()), abs=1e-4)
    assert shown()["Sum of the parts"] == pytest.approx(float(ref[last].max()), abs=1e-4)
    at.select_slider(key="attr_pos").set_value(2).run()
    at.radio(key="attr_mode").set_value("diff").run()
    _clean(at)
    target, base = at.selectbox(key="attr_target").value, at.selectbox(key="attr_base").value
    diff = float(ref[2, target] - ref[2, base])
    assert shown()["From the model"] == pytest.approx(diff, abs=1e-4)
    assert shown()["Sum of the parts"] == pytest.approx(diff, abs=1e-4)
    grid = plotly_array(chart_specs(at)["attr_cross_grid"]["data"][0]["z"])
    assert grid.shape == (lm.model.dec_cfg.n_layers, lm.model.dec_cfg.n_heads)


def test_patching_takes_a_corrupted_source():
    at = _open("bart", "patching")
    assert {"pt_s2s_encoder", "pt_s2s_cross"} <= set(chart_specs(at))
    corrupted = at.text_input(key="pt_corrupt")
    assert corrupted.value and corrupted.value != TEXT  # a word swapped by default
    corrupted.set_value(TEXT + " and more words").run()
    _clean(at)
    assert "same number of tokens" in " ".join(e.value for e in at.warning)
    assert "pt_s2s_encoder" not in chart_specs(at)


def test_generation_config_sets_the_pages_defaults_and_says_where(tmp_path):
    import json
    import shutil

    folder = tmp_path / "t5"
    shutil.copytree(tiny_seq2seq.folder("t5"), folder)
    (folder / "generation_config.json").write_text(json.dumps(
        {"decoder_start_token_id": 5, "eos_token_id": 9, "forced_bos_token_id": 7,
         "max_new_tokens": 17, "do_sample": True, "temperature": 0.7, "top_k": 12}))
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = str(folder)
    at.query_params["text"] = TEXT
    switch(at, "generate").run()
    _clean(at)
    assert at.slider(key="gen_n").value == 17 and at.radio(key="gen_mode").value == "sample"
    assert at.slider(key="gen_temp").value == pytest.approx(0.7)
    assert at.number_input(key="gen_topk").value == 12
    said = " ".join(e.value for e in at.caption)
    assert "from generation_config.json" in said and "forced" in said
    assert "(max_new_tokens, do_sample, temperature, top_k)" in said
    # a link's own setting wins over the file
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(model=str(folder), text=TEXT, gn="3")
    switch(at, "generate").run()
    assert at.slider(key="gen_n").value == 3


def test_a_decoder_folder_stops_at_its_generation_configs_end_token(tmp_path):
    import json
    import shutil

    import tiny_decoders
    from analysis.generation import generate_ids, prompt_window
    from model.loading import load_model

    folder = tmp_path / "qwen2"
    shutil.copytree(tiny_decoders.saved("qwen2"), folder)
    lm = load_model(str(folder), device="cpu")
    ids, _ = prompt_window(lm, TEXT)
    first = generate_ids(lm, ids, 3).new_ids  # greedy: the end token is its second token
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": first[1]}))
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(model=str(folder), text=TEXT, gn="10")
    switch(at, "generate").run()
    _clean(at)
    said = " ".join(e.value for e in at.caption)
    assert "Stopped after 2 new tokens: the model wrote an end token." in said
    assert "eos_token_id in generation_config.json" in said
