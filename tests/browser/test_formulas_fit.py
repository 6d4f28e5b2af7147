"""Every formula of /walkthrough (each step, for an encoder and a decoder) and of /positions ends
inside its column in an 800 px window with the sidebar open, drawn by a Chromium that shows its
scroll bars as a desktop browser does (headless Chromium hides them, which gave a formula the
10 px a visible scroll bar takes: several ran past the right edge by up to 11 px)."""

from __future__ import annotations

import pytest

from app_server import CHROMIUM
from test_browser import CHROME_ARGS, _settle, server  # noqa: F401  (fixture)

pytestmark = pytest.mark.browser

# Each display formula's drawn right edge (KaTeX's boxes, not its hidden MathML copy nor the
# long clipped stroke of a square root) against its column's right edge.
PAST_THE_EDGE = r"""() => [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
  .map(k => {
    let right = 0;
    for (const e of k.querySelectorAll('.katex-html, .katex-html *')) {
      if (e.closest('svg, .hide-tail')) continue;
      const r = e.getBoundingClientRect();
      if (r.width) right = Math.max(right, r.right);
    }
    const column = k.closest('[data-testid="stVerticalBlock"]').getBoundingClientRect();
    return {past: Math.round(right - Math.min(column.right, innerWidth)),
            formula: k.querySelector('annotation')?.textContent.slice(0, 60)};
  }).filter(f => f.past > 0)"""
PAGES = ([f"walkthrough?model={model}&step={n}" for model, steps in
          (("minilm", 27), ("tiny-chars", 27)) for n in range(1, steps + 1)]
         + [f"positions?model={model}" for model in ("minilm", "tiny-chars")])


@pytest.fixture(scope="module")
def desktop_browser():
    """Chromium with its scroll bars drawn, as on a desktop."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True,
                              ignore_default_args=["--hide-scrollbars"])
        yield b
        b.close()


def test_every_formula_fits_its_column_at_800_px(server, desktop_browser):  # noqa: F811
    page = desktop_browser.new_page(viewport={"width": 800, "height": 900})
    past, seen = [], 0
    for path in PAGES:
        page.goto(f"{server}/{path}", wait_until="domcontentloaded")
        page.locator('[data-testid="stMain"] .katex-display').first.wait_for(timeout=240_000)
        _settle(page)
        found = page.evaluate(PAST_THE_EDGE)
        seen += page.locator('[data-testid="stMain"] .katex-display').count()
        past += [(path, f["formula"], f["past"]) for f in found]
        if found:
            page.screenshot(path=f"/tmp/formula_past_{len(past)}.png")
    page.close()
    assert seen >= len(PAGES)  # a formula on every page looked at
    assert past == [], f"formulas past their column's right edge (page, formula, px): {past}"
