"""AppTest for the patching page: the induction preset on tiny-induction finds the heads the
induction and previous-token scores rank first (and shows the engine's grid), MiniLM patches
with the cosine metric, unequal prompt lengths get a clear message, and a head opens on the
attention page."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from analysis.induction import repeat_scores  # noqa: E402
from analysis.patching import (  # noqa: E402
    head_patching, induction_pair, prepare, prepare_ids, residual_patching,
)
from model import load_model  # noqa: E402
from ui.examples import SHORT  # noqa: E402
from chart_data import chart_specs as _charts, plotly_array as _array  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "patching"




def _texts(at: AppTest, *kinds: str) -> str:
    return " ".join(str(e.value) for kind in kinds for e in at.get(kind))


def _page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240).run()
    switch(at, PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def induction():
    return load_model("tiny-induction")


def _engine_mean(lm, which: str, n: int = 16, length: int = 10) -> np.ndarray:
    """The engine's head grid averaged over the preset's sequences (seeds 0 .. n - 1)."""
    return np.mean([head_patching(prepare_ids(lm, *induction_pair(length, 36, s, which)))
                    for s in range(n)], axis=0)  # [layer, head]


def test_the_preset_finds_the_induction_and_previous_token_heads(induction):
    at = _page()  # MiniLM, the default: one click switches to tiny-induction and the preset
    at.button(key="pt_to_preset").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["selection"].model_name == "tiny-induction"
    scores = repeat_scores(induction.model)
    ind = np.unravel_index(int(scores["induction"].argmax()), (2, 4))
    prev = np.unravel_index(int(scores["previous"].argmax()), (2, 4))

    engine = _engine_mean(induction, "first")  # the default: the first copy corrupted
    shown = _array(_charts(at)["pp_heads"]["data"][0]["z"])
    np.testing.assert_allclose(shown, engine, atol=1e-6)
    assert (0, int(shown[0].argmax())) == prev and (1, int(shown[1].argmax())) == ind
    text = _texts(at, "markdown")
    top = "has the largest positive value"
    assert f"Layer 0, head {prev[1]}** {top}" in text and "previous-token head" in text
    assert f"Layer 1, head {ind[1]}** {top}" in text and "induction head" in text
    assert "brightest" not in text
    first = prepare_ids(induction, *induction_pair(10, 36, 0, "first"))
    np.testing.assert_allclose(_array(_charts(at)["pp_resid"]["data"][0]["z"]),
                               residual_patching(first), atol=1e-6)
    assert at.query_params["pmode"] == ["preset"] or at.query_params["pmode"] == "preset"

    at.radio(key="pt_which").set_value("second").run()  # the copy corrupted: induction only
    assert not at.exception
    shown = _array(_charts(at)["pp_heads"]["data"][0]["z"])
    engine = _engine_mean(induction, "second")
    np.testing.assert_allclose(shown, engine, atol=1e-6)
    top = np.unravel_index(int(shown.argmax()), shown.shape)
    assert top == np.unravel_index(int(engine.argmax()), engine.shape) == ind
    assert at.selectbox(key="pp_box").value == tuple(int(i) for i in ind)  # offered first

    at.button(key="pp_open").click().run()  # open it: the clean sequence goes to the sidebar
    assert not at.exception
    assert (at.session_state["attn_layer"], at.session_state["attn_head"]) == tuple(
        int(i) for i in ind)
    clean = "".join(induction.tokenizer.tokens(induction_pair(10, 36, 0, "second")[0].tolist()))
    assert at.session_state["sb_text"] == clean
    assert "attn_heatmap" in _charts(at)  # the attention page is drawn


def test_minilm_patches_with_the_cosine_metric(minilm):
    at = _page()
    corrupted = at.text_input(key="pt_corrupt").value
    assert corrupted != SHORT and corrupted  # a default corrupted prompt is offered
    text = _texts(at, "caption")
    assert "cosine" in text and "encoder" in text
    p = prepare(minilm, SHORT, corrupted)
    charts = _charts(at)
    resid = _array(charts["pt_resid"]["data"][0]["z"])
    np.testing.assert_allclose(resid, residual_patching(p), atol=1e-6)
    np.testing.assert_allclose(_array(charts["pt_heads"]["data"][0]["z"]), head_patching(p),
                               atol=1e-6)
    differ = [i for i in range(p.n_pos) if p.clean_tokens[i] != p.corrupted_tokens[i]]
    assert resid[0, differ].sum() == pytest.approx(1.0, abs=0.05) or len(differ) == 1
    assert f"clean {p.clean_value:.3f}, corrupted {p.corrupted_value:.3f}" in text


def test_unequal_lengths_say_both_counts_and_show_the_tokens(minilm):
    at = _page()
    short = "The cat sat."
    at.text_input(key="pt_corrupt").input(short).run()
    assert not at.exception
    n_clean = int(minilm.encode(SHORT).attention_mask.sum())
    n_short = int(minilm.encode(short).attention_mask.sum())
    warning = _texts(at, "warning")
    assert f"**{n_clean}** tokens long and the corrupted prompt **{n_short}**" in warning
    assert "same number of tokens" in warning
    table = at.dataframe[0].value  # the only table on the page
    assert len(table) == max(n_clean, n_short) and "cat" in table["clean"].tolist()
    assert "pt_resid" not in _charts(at)


def test_a_click_in_the_head_grid_opens_that_head(monkeypatch):
    """The on_select callback: a clicked cell (its customdata) opens that head on the
    attention page, keeps the model, and puts the preset's text in the sidebar."""
    from ui import callbacks, patching_inputs, view_state

    state = {"pp_heads": SimpleNamespace(selection=SimpleNamespace(
        points=[{"customdata": [1, 3]}])), "_pt_clean_text": "abcabc",
        "sb_model_choice": "tiny-induction", "sb_text": "a longer text", "sb_pair": "",
        "attn_mode": "Attention rollout"}
    fake = SimpleNamespace(session_state=state)
    for module in (patching_inputs, callbacks, view_state):
        monkeypatch.setattr(module, "st", fake)
    patching_inputs.open_patched_head("pp_heads", 4, "_pt_clean_text")()
    assert (state["attn_layer"], state["attn_head"], state["_view_jump"]) == (1, 3, "attention")
    assert state["sb_text"] == "abcabc" and state["sb_model_choice"] == "tiny-induction"
    assert "attn_mode" not in state  # back to the page's default: raw attention


def test_a_decoder_gets_a_logit_difference_of_two_chosen_tokens():
    at = _page()
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    assert not at.exception, [e.value for e in at.exception]
    lm = load_model("tiny-chars")
    text = at.session_state["selection"].text
    corrupted = at.text_input(key="pt_corrupt").value
    assert corrupted and corrupted != text
    default = prepare(lm, text, corrupted)  # the engine's default pair is the page's
    assert (at.selectbox(key="pt_answer").value, at.selectbox(key="pt_wrong").value) == (
        default.answer, default.wrong)
    others = [i for i in lm.run(text).logits[0, -1].argsort(descending=True).tolist()[:8]
              if i not in (default.answer, default.wrong)]
    at.selectbox(key="pt_wrong").set_value(others[0]).run()  # another wrong token
    assert not at.exception
    answer, wrong = at.selectbox(key="pt_answer").value, at.selectbox(key="pt_wrong").value
    p = prepare(lm, text, corrupted, answer, wrong)
    at.toggle(key="pt_all").set_value(True).run()  # 43 positions: it opened on the change
    np.testing.assert_allclose(_array(_charts(at)["pt_resid"]["data"][0]["z"]),
                               residual_patching(p), atol=1e-6)
    caption = _texts(at, "caption")
    assert f"{p.clean_value:.3f} on the clean prompt, {p.corrupted_value:.3f}" in caption


def test_the_default_pair_on_tiny_chars_flips_the_answer_and_lights_two_columns():
    """The default ("mat." → "mat,") once changed only the last character, so the grid
    was one dark column, and both prompts preferred the same token. The default is now a change
    before the last token after which the model's top next token differs; the answer and wrong
    tokens are the two prompts' own top tokens, and more than one column lights up."""
    from analysis.patching import SMALL_GAP

    text = "The cat sat on the mat."
    at = AppTest.from_file(APP, default_timeout=240)
    at.session_state["sb_text"] = text
    at.run()
    switch(at, PAGE).run()
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["selection"].text == text
    corrupted = at.text_input(key="pt_corrupt").value
    lm = load_model("tiny-chars")
    top_clean = int(lm.run(text).logits[0, -1].argmax())
    top_corrupt = int(lm.run(corrupted).logits[0, -1].argmax())
    assert top_clean != top_corrupt  # the two prompts prefer different next tokens
    answer, wrong = at.selectbox(key="pt_answer").value, at.selectbox(key="pt_wrong").value
    assert (answer, wrong) == (top_clean, top_corrupt)
    p = prepare(lm, text, corrupted, answer, wrong)
    assert p.clean_tokens[-1] == p.corrupted_tokens[-1]  # the change is further back
    assert abs(p.clean_value - p.corrupted_value) >= SMALL_GAP
    z = _array(_charts(at)["pt_resid"]["data"][0]["z"])
    np.testing.assert_allclose(z, residual_patching(p), atol=1e-6)
    lit = np.flatnonzero((np.abs(z) > 0.1).any(axis=0))
    assert len(lit) > 1, lit
    caption = _texts(at, "caption")
    assert "largest positive value" in caption and "brightest" not in caption
    assert f"{p.clean_value:.3f} on the clean prompt, {p.corrupted_value:.3f}" in caption
    assert "barely changes the answer" not in _texts(at, "warning")


DECLONG = ("The old lighthouse keeper climbed the stairs every evening to light the lamp. The "
           "sea was loud and the wind was cold, and far away a ship was looking for the harbour "
           "in the dark. He thought about his daughter, who lived in the city now, and about the "
           "long winter that was coming.")


def test_a_long_decoder_text_is_patched_on_its_first_whole_words_with_one_message():
    """On the lighthouse paragraph the sidebar banner once said "ran on the first 64",
    a second box said "at most 64" and nothing ran, the button said "61" with no reason, and
    the corrupted prompt was empty. Now one message says why 61, the page patches those 61
    tokens at once (corrupted prompt filled, grids drawn), and the button keeps them."""
    from ui.patching_inputs import first_words, token_count

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["sb_text"] = DECLONG
    at.run()
    switch(at, PAGE).run()
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    assert not at.exception, [e.value for e in at.exception]
    lm = load_model("tiny-chars")
    shorter = first_words(lm, DECLONG, 64)
    n = token_count(lm, shorter)
    warnings = [str(w.value) for w in at.warning]
    assert len(warnings) == 1, warnings  # no second banner about the model's context
    assert f"first **{n}** tokens, the whole words that fit" in warnings[0]
    assert "the next word would not fit whole" in warnings[0] or n == 64
    corrupted = at.text_input(key="pt_corrupt").value
    assert corrupted and token_count(lm, corrupted) == n
    assert _array(_charts(at)["pt_resid"]["data"][0]["z"]).shape[1] < n  # zoomed on the change
    at.toggle(key="pt_all").set_value(True).run()  # every position
    z = _array(_charts(at)["pt_resid"]["data"][0]["z"])
    assert z.shape[1] == n
    button = at.button(key="pt_shorten")
    assert f"first {n} tokens" in button.label
    button.click().run()
    assert not at.exception
    assert at.session_state["sb_text"] == shorter
    assert not at.warning  # the page goes on with no message


def test_a_text_too_long_to_patch_gets_a_one_click_shorter_version():
    from ui.examples import LONG
    from ui.patching_inputs import token_count

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["sb_text"] = LONG * 3
    at.run()
    switch(at, PAGE).run()
    assert not at.exception
    assert "patching takes at most" in _texts(at, "warning")
    assert at.button(key="pt_run")  # the first 128 tokens, ready to patch
    button = at.button(key="pt_shorten")
    button.click().run()
    assert not at.exception
    shorter = at.session_state["sb_text"]
    minilm = load_model("minilm")
    assert 0 < token_count(minilm, shorter) <= 128 and (LONG * 3).startswith(shorter)
    assert f"first {token_count(minilm, shorter)} tokens" in button.label
    assert "patching takes at most" not in _texts(at, "warning")  # the page goes on


def test_first_screen_glosses_its_words_and_keeps_the_hook_note_in_help():
    """The first screen once said "residual stream" before any gloss, the first button said "circuit"
    and "induction heads" with no gloss, and "each patch is a temporary hook" sat in the intro."""
    at = _page()
    intro = at.caption[0]
    assert "temporary hook" not in intro.value and "hook" not in intro.value
    assert "residual stream (the running vector" in intro.value
    assert intro.help and "Nothing in the model is changed" in intro.help
    button = at.button(key="pt_to_preset")
    assert "circuit" not in button.label and "induction" not in button.label
    assert "(a circuit)" in button.help and "(an induction head)" in button.help
