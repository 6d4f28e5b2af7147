"""Waiting for a plotly figure by its title, as a reader would find it: scrolling down the
page. A figure far below the fold may not be drawn until it is scrolled near, so a test that
only waits can wait forever on a page a person would have read to the end."""

from __future__ import annotations

import time

FOUND = """part => [...document.querySelectorAll('.js-plotly-plot')]
    .some(g => String(g.layout?.title?.text ?? '').includes(part))"""
SCROLL_DOWN = """() => {
  const items = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]')];
  if (items.length) items[items.length - 1].scrollIntoView({block: 'end'});
}"""
SCROLL_UP = """() => document.querySelector('[data-testid="stMain"] [data-testid="stElementContainer"]')
    ?.scrollIntoView({block: 'start'})"""
WHAT_IS_THERE = """() => ({
  text: (document.querySelector('[data-testid="stMain"]')?.innerText || '').slice(0, 1500),
  titles: [...document.querySelectorAll('.js-plotly-plot')]
      .map(g => String(g.layout?.title?.text ?? '(no title)')),
})"""


def wait_for_figure(page, title_part: str, timeout_s: float = 120.0) -> None:
    """Wait until a plotly figure whose title holds `title_part` is drawn, scrolling to the end
    of the page between looks, then scroll back to the top. Fails with what the page shows."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(FOUND, title_part):
        if time.monotonic() > deadline:
            seen = page.evaluate(WHAT_IS_THERE)
            raise AssertionError(f"no figure titled “{title_part}” after {timeout_s:.0f} s; "
                                 f"figures: {seen['titles']}; page text: {seen['text']!r}")
        page.evaluate(SCROLL_DOWN)
        page.wait_for_timeout(500)
    page.evaluate(SCROLL_UP)
