"""Plain words on first screens (review 8b): where the model runs, what a row of attention
is, what a logit and an MLP are. Symbols and the word "softmax" stay in help tooltips."""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page(path).run()
    assert not at.exception
    return at


def test_the_sidebar_says_where_the_model_runs_in_words():
    at = _page("app_pages/attention.py")
    said = [c for c in at.sidebar.caption if c.value.startswith("Runs on")]
    assert [c.value for c in said] == ["Runs on the processor (CPU)"]  # no GPU on this machine
    assert "graphics card" in said[0].proto.help
    assert not [c for c in at.sidebar.caption if "Device:" in c.value]


def test_attention_says_rows_add_up_without_the_word_softmax():
    at = _page("app_pages/attention.py")
    intro = next(c for c in at.caption if "Rows are queries" in c.value)
    assert "add up to 1" in intro.value and "softmax" not in intro.value
    assert "softmax" in intro.proto.help and "d_model" not in intro.value
    assert "every layer so far" in at.radio(key="attn_mode").help  # rollout, in plain words


def test_attribution_glosses_the_logit_before_saying_minilm_cannot():
    at = _page("app_pages/attribution.py")
    first = at.caption[0].value
    assert "its *logit*" in first and "the small network after each attention layer" in first
    reason = " ".join(i.value for i in at.info)
    assert reason.startswith("Taking the score apart needs a decoder")
    assert "MiniLM is an encoder" in reason


def test_ablation_names_its_effects_in_words_and_keeps_the_units_in_the_table():
    at = _page("app_pages/ablation.py")  # a short text: every head is measured at once
    options = at.radio(key="abl_metric").options
    assert options == ["How far the sentence vector turns", "How far token vectors turn"]
    assert "nats" not in " ".join(options) and "cosine" not in " ".join(options)
    assert "1 − cosine" in at.radio(key="abl_metric").help  # the measure, for who wants it


def test_positions_explains_pca_and_the_width_symbol():
    said = " ".join(c.value for c in _page("app_pages/positions.py").caption)
    assert "PCA (principal component analysis)" in said
    assert "d_model is the table's width" in said


def test_the_logit_lens_says_when_the_models_own_guesses_are_mostly_wrong():
    from analysis.logit_lens import logit_lens
    from model import load_model
    from ui.examples import known_sentence

    at = AppTest.from_file(APP, default_timeout=300).run()
    at.text_area(key="sb_text").input("The cat sat on the mat.").run()
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    at.switch_page("app_pages/logit_lens.py").run()
    assert not at.exception
    lm = load_model("tiny-chars")
    trace = lm.run("The cat sat on the mat.",
                   keep=lambda name: name.endswith(("hook_resid_pre", "hook_resid_post")))
    lens = logit_lens(lm.model, trace.hidden_states, trace.token_ids, k=5)
    n = trace.n_tokens
    right = int((lens.next_rank[-1, :n - 1] == 1).sum())
    assert 2 * right < n - 1  # the run itself: tiny-chars misses most of this English
    note = [c.value for c in at.caption if c.value.startswith("The model's own guess")]
    assert note and f"at {right} of {n - 1} positions" in note[0]
    assert "This model learned only from" in note[0]
    at.button(key="lens_known_text").click().run()
    assert at.text_area(key="sb_text").value == known_sentence("tiny-chars")
    assert not [c for c in at.caption if c.value.startswith("The model's own guess")]
