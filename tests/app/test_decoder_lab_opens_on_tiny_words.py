"""A decoder-lab page opened while the sidebar holds a model that cannot do it (MiniLM, an
encoder) opens on tiny-words, the decoder trained here, with a sentence of the kind it learned
from; the page says why in one line and offers the other bundled decoders. A link that names
its model keeps it (the page offers the switch), and so does a learner who picks an encoder
while on the page."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import APP, switch  # noqa: E402

from chart_data import chart_specs as _charts  # noqa: E402
from ui.examples import known_sentence  # noqa: E402
from ui.words_card import card_lines  # noqa: E402

pytestmark = pytest.mark.app

PAGES = {"generate": ("gen_next_tokens", "gen_switch"),
         "logit-lens": ("lens_table", "lens_switch"),
         "attribution": ("attr_grid", "attr_switch")}  # page: (its figure, its buttons' key)


def _texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def _from_start(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()  # the start page: MiniLM
    switch(at, page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", list(PAGES))
def test_a_decoder_page_opens_on_tiny_words_with_its_sentence(page):
    at = _from_start(page)
    assert at.selectbox(key="sb_model_choice").value == "tiny-words"
    sentence = known_sentence("tiny-words")
    assert at.text_area(key="sb_text").value == sentence
    assert "gave" in sentence or "handed" in sentence  # who gets the thing given?
    said = _texts(at.info)
    assert "MiniLM is an encoder" in said and "opened on tiny-words" in said
    chart, key = PAGES[page]
    assert chart in _charts(at)  # the page itself, on tiny-words' run
    assert at.button(key=f"{key}_tiny-chars")  # the other decoders, one click away
    assert [e for e in at.sidebar.expander if e.label == "What tiny-words learned"]
    assert card_lines()[-1] in _texts(at.sidebar.caption)  # its card, under the model box


def test_the_model_a_link_names_is_kept():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = "minilm"
    switch(at, "generate").run()
    assert not at.exception
    assert at.selectbox(key="sb_model_choice").value == "minilm"
    assert "gen_next_tokens" not in _charts(at)
    assert at.button(key="gen_switch_tiny-words")  # one click away, first


def test_picking_an_encoder_on_the_page_is_kept_and_the_note_goes():
    at = _from_start("generate")
    at.selectbox(key="sb_model_choice").set_value("minilm").run()
    assert not at.exception
    assert at.selectbox(key="sb_model_choice").value == "minilm"
    assert "opened on tiny-words" not in _texts(at.info)
    at.button(key="gen_switch_tiny-words").click().run()
    assert at.selectbox(key="sb_model_choice").value == "tiny-words"
    assert "opened on tiny-words" not in _texts(at.info)  # chosen, not opened on


def test_the_learners_own_text_is_kept():
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.text_area(key="sb_text").input("When Mary and John went to the store, John gave a drink "
                                      "to").run()
    switch(at, "logit-lens").run()
    assert at.selectbox(key="sb_model_choice").value == "tiny-words"
    assert at.text_area(key="sb_text").value.startswith("When Mary and John")


def test_a_server_without_tiny_words_offers_what_it_has(hosted):
    hosted.setenv("ATTENTION_LAB_MODELS", "minilm,tiny-chars")
    at = _from_start("generate")
    assert at.selectbox(key="sb_model_choice").value == "minilm"
    assert at.button(key="gen_switch_tiny-chars")
