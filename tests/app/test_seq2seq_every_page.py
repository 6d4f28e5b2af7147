"""Every declared page (teaching/pages.py) opened in AppTest with a saved random-weight BART,
Marian and T5 folder (tests/tiny_seq2seq.py): no exception and no error box; a page built for
one stack of layers says in words that this model has an encoder and a separate decoder, as it
does for tiny-reverse; the decoder lab (generate, attribution, patching) takes the decoder
apart and draws its figures; and on the pages that do fit, every slider, select box and radio moved
to its last choice, every toggle flipped and every button clicked re-runs the page clean (no control that breaks the page)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

import tiny_seq2seq  # noqa: E402
from chart_data import chart_specs  # noqa: E402
from page_links import switch  # noqa: E402
from teaching.pages import PAGE_SPECS  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TEXT = "Attention lets every token look at every other token."
FAMILIES = ["t5", "bart", "marian"]
# Pages that follow one stack of layers to a next-token score: an encoder-decoder is turned
# away from them with a sentence, not an error.
# Buttons this test leaves alone: recording a lesson step and training a model have their own
# tests and do not depend on the model shown; a positions page's head button leaves for the
# attention page (tests/app/test_score_links.py follows it).
NOT_CLICKED = {"teach_record", "train_start", "train_reset"}
LEAVES_THE_PAGE = "pos_why_"
ONE_STACK = {"effect", "logit-lens"}
# The decoder lab takes an encoder-decoder's decoder apart: the figures each page must draw.
DECODER_LAB = {"generate": {"gen_next_tokens", "gen_attention", "gen_cross"},
               "attribution": {"attr_layers", "attr_grid", "attr_cross_grid"},
               "patching": {"pt_s2s_encoder", "pt_s2s_decoder", "pt_s2s_own", "pt_s2s_cross"}}


def _open(family: str, path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = str(tiny_seq2seq.folder(family))
    at.query_params["text"] = TEXT
    switch(at, path).run()
    return at


def _clean(at: AppTest, where: str) -> None:
    assert not at.exception, (where, [e.value for e in at.exception])
    assert not at.error, (where, [e.value for e in at.error])


def _said(at: AppTest) -> str:
    return " ".join(e.value for e in [*at.info, *at.warning, *at.markdown, *at.caption])


def test_every_page_is_in_the_list():
    """A page added later is covered here too, and the ones that turn the model away exist."""
    paths = {spec.path for spec in PAGE_SPECS}
    assert ONE_STACK <= paths and {"attention", "walkthrough", "positions"} <= paths
    assert set(DECODER_LAB) <= paths


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("path", [spec.path for spec in PAGE_SPECS])
def test_page_opens_clean(family, path):
    at = _open(family, path)
    _clean(at, f"{family} {path}")
    if path in ONE_STACK:
        words = " ".join(e.value for e in at.info)
        assert "encoder" in words and "separate decoder" in words, words
    if path in DECODER_LAB:
        assert DECODER_LAB[path] <= set(chart_specs(at)), (family, path)
        assert "encoder–decoder" in " ".join(e.value for e in [*at.caption, *at.info])
    if path == "walkthrough":
        assert "encoder-decoder" in " ".join(e.value for e in at.info).lower()


def _last_choice(widget):
    options = list(getattr(widget, "options", []) or [])
    if options:
        return options[-1]
    return getattr(widget, "max", None)


def _settable(widget) -> bool:
    """AppTest sets a select box or radio by its shown text, which it formats again: a box whose values
    are not text (a (layer, head) pair shown as words) cannot be set from a test."""
    last = widget.options[-1]
    try:
        return str(widget.format_func(last)) == last
    except Exception:  # noqa: BLE001 - a format function made for other values
        return False


NO_MODEL_CONTROLS = {"start", "lessons", "teach", "join"}


@pytest.mark.parametrize("family", FAMILIES)
# attribution's controls show formatted choices this test cannot set, and patching's only control
# is a text box: test_seq2seq_decoder_lab.py moves them one by one
@pytest.mark.parametrize("path", [spec.path for spec in PAGE_SPECS if spec.path not in ONE_STACK
                                  | NO_MODEL_CONTROLS | {"attribution", "patching"}])
def test_every_control_on_a_page_that_fits_works(family, path):
    at = _open(family, path)
    _clean(at, f"{family} {path}")
    moved = 0
    for kind in ("slider", "select_slider", "selectbox", "radio"):
        keys = [w.key for w in getattr(at, kind) if w.key and not w.key.startswith("sb_")]
        for key in keys:
            widget = getattr(at, kind)(key=key)
            if widget.disabled:
                continue
            choice = _last_choice(widget)
            if choice == widget.value and getattr(widget, "options", None):
                choice = widget.options[0]  # already at the last: move it to the first
            if choice is None or choice == widget.value:
                continue
            if getattr(widget, "options", None) and not _settable(widget):
                continue
            widget.set_value(choice).run()
            _clean(at, f"{family} {path} {key}={choice!r}")
            moved += 1
    for toggle in [w.key for w in at.toggle if w.key and w.key != "projector" and not w.disabled]:
        at.toggle(key=toggle).set_value(not at.toggle(key=toggle).value).run()
        _clean(at, f"{family} {path} {toggle} flipped")
        moved += 1
    for button in [w.key for w in at.button if w.key and w.key not in NOT_CLICKED
                   and not w.key.startswith(LEAVES_THE_PAGE)]:
        if at.button(key=button).disabled:
            continue
        at.button(key=button).click().run()
        _clean(at, f"{family} {path} {button} clicked")
        moved += 1
    assert moved, f"no control tried on {path}"
