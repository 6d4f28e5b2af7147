"""Chromium: the walkthrough's preview tables show every column their caption promises, with
no sideways scroll, at 1400 and 800 px. At 800 the ids table once cut "7·becaus",
the two GELU tables side by side lost their third column, and the pooled vector showed 5 of
the 8 columns its caption promised even at 1400."""

from __future__ import annotations

import urllib.parse

import pytest

from test_narrow import SHORT, _open, browser, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

# Each data grid: its visible width and the width of all its columns (.dvn-scroller scrolls
# sideways when the second is larger).
WIDTHS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')].map(d => {
  const s = d.querySelector('.dvn-scroller');
  return s ? [s.clientWidth, s.scrollWidth] : null;
})"""
# MiniLM: the tokens table (every position, scrolling down) and the ids (1), Q, K and V (10), before/after GELU (22), the [CLS] vector and the pooled
# one (27). tiny-chars: the mask with its −∞ (13), the logits named by their tokens (26).
CASES = [("minilm", 1, 2), ("minilm", 10, 3), ("minilm", 22, 2), ("minilm", 27, 2),
         ("tiny-chars", 13, 2), ("tiny-chars", 26, 1)]


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("model, step, n_tables", CASES,
                         ids=[f"{m}-step{s}" for m, s, _ in CASES])
def test_preview_tables_never_scroll_sideways(server, browser, width, model, step,  # noqa: F811
                                              n_tables):
    page = browser.new_page(viewport={"width": width, "height": 2400})
    query = urllib.parse.urlencode({"model": model, "text": SHORT, "step": step})
    _open(page, f"{server}/walkthrough?{query}")
    page.wait_for_function(
        "n => [...document.querySelectorAll('[data-testid=\"stDataFrame\"] .dvn-scroller')]"
        ".length >= n", arg=n_tables, timeout=60_000)
    tables = page.evaluate(WIDTHS)
    page.close()
    assert len(tables) == n_tables and all(tables), tables
    for visible, needed in tables:
        assert visible > 200 and needed <= visible + 1, (visible, needed)
