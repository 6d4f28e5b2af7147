"""AppTest: the effect page's integrated gradients on a Llama-style model start from the padding
token, say the gap as a share of the change, and warn (saying more steps will not help) when
the learner picks zero vectors, whose sum does not add up there."""

from __future__ import annotations

import os


os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import start_app, switch  # noqa: E402
from app_pages.effect.words import BASELINE_HELP, STEPS_HELP  # noqa: E402

CAT = "The cat sat on the mat."


def _llama_page(tiny_dirs) -> AppTest:
    at = start_app(CAT)
    at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
    at.text_input(key="sb_model_other").input(str(tiny_dirs["llama"])).run()
    switch(at, "effect").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _ig_caption(at: AppTest) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Integrated gradients:"))


def test_a_llama_starts_from_padding_and_zero_vectors_are_flagged(tiny_dirs):
    at = _llama_page(tiny_dirs)
    radio = at.radio(key="eff_baseline")
    assert radio.value == "pad" and radio.help == BASELINE_HELP
    assert at.select_slider(key="eff_steps").help == STEPS_HELP
    caption = _ig_caption(at)
    assert "64 steps from padding tokens" in caption and "of that change" in caption
    assert not [w for w in at.warning if "do not add up" in w.value]

    radio.set_value("zero").run()
    assert not at.exception
    assert "from zero vectors" in _ig_caption(at)
    warnings = [w.value for w in at.warning if "do not add up" in w.value]
    assert len(warnings) == 1 and "More steps will not fix that" in warnings[0]
