"""tiny-chars knows only the text it was trained on (our paragraphs about attention and
sentences like them): switching to it in one click gives it a sentence of that kind when the
sidebar still holds the app's example, the sidebar says what it learned from and offers such a
sentence in one click; the model box shows short labels with the description under it."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_link  # noqa: E402

from model import BUNDLED, load_model  # noqa: E402
from ui.examples import LONG, SHORT, known_sentence  # noqa: E402
from ui.model_names import description, short_label  # noqa: E402

pytestmark = pytest.mark.app

APP = str(Path(__file__).resolve().parents[2] / "app.py")
# The logit lens from a link that names MiniLM: the page keeps it and offers the decoders (from
# another page it opens on tiny-words: test_decoder_lab_opens_on_tiny_words.py).
LENS = "logit-lens"


def _texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def _loss(lm, text: str) -> float:
    trace = lm.run(text)
    logits = torch.as_tensor(trace.logits[0]).float()
    ids = torch.as_tensor(trace.input_ids[0])
    return float(F.cross_entropy(logits[:-1], ids[1:]))


def test_the_known_sentence_is_text_tiny_chars_predicts_better_than_chance():
    lm = load_model("tiny-chars")
    sentence = known_sentence("tiny-chars")
    assert sentence and len(sentence) <= lm.cfg.n_ctx
    chance = math.log(lm.cfg.d_vocab)  # a uniform guess over its characters
    assert _loss(lm, sentence) < chance / 4
    assert _loss(lm, SHORT) > chance  # why the switch does not keep the app's example
    assert known_sentence("minilm") is None


def test_switching_from_the_example_gives_tiny_chars_a_sentence_it_knows():
    at = open_link(LENS, model="minilm")
    assert "sentence of the kind it learned" in _texts(at.caption)
    at.button(key="lens_switch_tiny-chars").click().run()
    assert not at.exception
    assert at.selectbox(key="sb_model_choice").value == "tiny-chars"
    assert at.text_area(key="sb_text").value == known_sentence("tiny-chars")
    assert "learned only from" in _texts(at.sidebar.caption)
    assert not [b for b in at.button if b.key == "sb_known_text"]  # already in the box


def test_switching_keeps_the_learners_own_text_and_offers_a_known_sentence():
    at = open_link(LENS, model="minilm")
    at.text_area(key="sb_text").input("My own words here.").run()
    assert "sentence of the kind it learned" not in _texts(at.caption)
    at.button(key="lens_switch_tiny-chars").click().run()
    assert at.text_area(key="sb_text").value == "My own words here."
    assert "learned only from" in _texts(at.sidebar.caption)
    at.button(key="sb_known_text").click().run()
    assert not at.exception
    assert at.text_area(key="sb_text").value == known_sentence("tiny-chars")


def test_the_long_example_counts_as_the_apps_own_text():
    at = open_link(LENS, model="minilm")
    at.selectbox(key="sb_example").set_value("Long paragraph").run()
    assert at.text_area(key="sb_text").value == LONG
    at.button(key="lens_switch_tiny-chars").click().run()
    assert at.text_area(key="sb_text").value == known_sentence("tiny-chars")


def test_the_model_box_has_short_labels_and_the_description_under_it():
    at = AppTest.from_file(APP, default_timeout=300).run()
    box = at.selectbox(key="sb_model_choice")
    for name in BUNDLED:
        assert short_label(name) in box.options
        assert len(short_label(name)) <= 32  # what shows in the sidebar's box uncut
    assert box.value == "minilm"
    cfg = load_model("minilm").cfg
    caption = _texts(at.sidebar.caption)
    assert description("minilm") in caption
    assert f"{cfg.n_layers} layers × {cfg.n_heads} heads" in caption
    assert f"{cfg.d_model} numbers" in caption
    assert "learned only from" not in caption  # MiniLM gets no tiny-chars note
    box.set_value("tiny-chars").run()
    tiny = load_model("tiny-chars").cfg
    assert f"{tiny.n_layers} layers × {tiny.n_heads} heads" in _texts(at.sidebar.caption)


def test_tiny_reverse_reverses_its_known_word_and_not_the_example():
    lm = load_model("tiny-reverse")
    word = known_sentence("tiny-reverse")
    assert word and len(word) < lm.cfg.n_ctx
    assert lm.run(word).outputs[0] == word[::-1]
    read = "".join(lm.run(SHORT).tokens[:-1])  # what it read of the example (end marker off)
    assert lm.run(SHORT).outputs[0] != read[::-1]  # garbled: why the sidebar offers the word


def test_the_sidebar_offers_tiny_reverse_a_word_it_knows():
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.selectbox(key="sb_model_choice").set_value("tiny-reverse").run()
    assert not at.exception
    assert "learned only to write single short words" in _texts(at.sidebar.caption)
    button = at.button(key="sb_known_text")
    assert button.label == "Use a word it knows"
    button.click().run()
    assert not at.exception
    assert at.text_area(key="sb_text").value == known_sentence("tiny-reverse")
