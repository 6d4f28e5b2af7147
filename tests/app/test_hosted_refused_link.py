"""Hosted mode, a link naming a model the server does not offer: the page says so in one
sentence, and a page that needs a decoder says it in the same sentence and offers the bundled
decoders, instead of a sidebar alert, the default encoder and a second alert."""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _open(page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for name, value in params.items():
        at.query_params[name] = value
    switch(at, page)
    return at.run()


def _alerts(at: AppTest) -> list[str]:
    """Every warning, info and error, in the page and in the sidebar, as read on screen
    (Markdown's escapes taken out)."""
    found = [a.value for kind in ("warning", "info", "error") for a in getattr(at, kind)] + [
        a.value for kind in ("warning", "info", "error") for a in getattr(at.sidebar, kind)]
    return [a.replace("\\", "") for a in found]


def test_generate_with_a_refused_model_says_one_sentence_and_offers_the_decoders(hosted):
    at = _open("generate", model="gpt2")
    assert not at.exception
    alerts = [a for a in dict.fromkeys(_alerts(at))]  # the page lists main and sidebar apart
    assert len(alerts) == 1, alerts
    said = alerts[0]
    assert "does not offer “gpt2”" in said and "generation needs a decoder" in said
    assert said.count(". ") == 0 and "minilm" not in said  # one sentence, no internal id
    buttons = [b.label for b in at.button]
    assert "Switch to tiny-chars" in buttons and "Switch to tiny-induction" in buttons
    next(b for b in at.button if b.label == "Switch to tiny-chars").click().run()
    assert not at.exception
    assert at.selectbox(key="sb_model_choice").value == "tiny-chars"
    assert not any("does not offer" in a for a in _alerts(at))  # said once, then gone
    assert not any(b.label.startswith("Switch to") for b in at.button)  # the page works


def test_a_page_the_default_model_serves_says_what_it_shows_instead(hosted):
    at = _open("attention", model="gpt2")
    assert not at.exception and at.get("plotly_chart")
    said = [a for a in dict.fromkeys(_alerts(at)) if "does not offer" in a]
    assert said == ["This server does not offer “gpt2”, the model the link asked for, so the "
                    "page shows MiniLM (reads text) instead."]
    switch(at, "heads")
    at.run()
    assert not at.exception and not any("does not offer" in a for a in _alerts(at))
