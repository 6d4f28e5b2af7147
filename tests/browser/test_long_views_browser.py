"""Chromium at 800 × 900 and 1400 × 900 with the long example text (ui.examples.LONG):
patching on tiny-induction opens its residual grid zoomed on the change, every column at
least 14 px wide with the changed position labelled; the effect page draws the words
themselves at a readable size and its strip with cells of at least 8 px; the walkthrough's
step and its Previous / Next buttons sit above the fold."""

from __future__ import annotations

import urllib.parse

import pytest

from test_narrow import _open, browser, server  # noqa: F401  (fixtures)
from ui.examples import LONG

pytestmark = pytest.mark.browser
SIZES = [(800, 900), (1400, 900)]

# Per figure: its title, the plot's width, the number of columns drawn (heatmaps: cells of the
# first row; bars: bars), the x tick labels, and the smallest font of a bar's text
FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
  const t = (gd.data || [])[0] || {}, fl = gd._fullLayout || {}, ax = fl.xaxis || {};
  const range = ax.range || [0, 1], shown = Math.abs(range[1] - range[0]);
  return {title: gd.querySelector('.gtitle')?.textContent || '', plot: ax._length || 0,
          shown, type: t.type,
          n: t.type === 'bar' ? (t.x || []).length : (t.z && t.z[0] ? t.z[0].length : 0),
          ticks: [...gd.querySelectorAll('.xtick text')].map(e => e.textContent),
          barFont: Math.min(...[...gd.querySelectorAll('.bartext')]
                                .map(e => parseFloat(getComputedStyle(e).fontSize)))};
})"""


def _figure(page, starts: str, timeout: int = 180_000) -> dict:
    page.wait_for_function(f"() => ({FIGURES})().some(f => f.title.startsWith({starts!r}))",
                           timeout=timeout)
    page.wait_for_timeout(1500)  # drawn at its final width
    return next(f for f in page.evaluate(FIGURES) if f["title"].startswith(starts))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_patching_opens_zoomed_on_the_change(server, browser, size):  # noqa: F811
    page = browser.new_page(viewport={"width": size[0], "height": size[1] * 5})
    query = urllib.parse.urlencode({"model": "tiny-induction", "text": LONG,
                                    "pmode": "prompts"})
    _open(page, f"{server}/patching?{query}")
    grid = _figure(page, "Metric recovered, patching the residual")
    page.close()
    assert grid["plot"] / grid["shown"] >= 14, grid  # px per column
    assert any("→" in t for t in grid["ticks"]), grid  # the changed position is labelled
    assert any(t.startswith("⋯") for t in grid["ticks"]), grid


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_effect_draws_the_words_readably_and_zooms_its_strip(server, browser, size):  # noqa: F811
    page = browser.new_page(viewport={"width": size[0], "height": size[1] * 5})
    _open(page, f"{server}/effect?" + urllib.parse.urlencode({"model": "minilm",
                                                              "text": LONG}))
    words = _figure(page, "Your text, coloured by")
    strip = _figure(page, "How much each token matters")
    page.close()
    assert words["n"] > 300 and words["barFont"] >= 12, words
    assert strip["plot"] / strip["shown"] >= 8, strip
    assert len(strip["ticks"]) >= 5, strip  # the window's tokens are named


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("model", ["tiny-induction", "minilm"])
def test_the_walkthrough_step_and_its_buttons_are_above_the_fold(server, browser, size,  # noqa: F811
                                                                  model):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    _open(page, f"{server}/walkthrough?" + urllib.parse.urlencode({"model": model,
                                                                   "text": LONG}))
    page.get_by_role("button", name="Next ▶").wait_for(timeout=60_000)
    boxes = page.evaluate("""() => {
        const main = document.querySelector('[data-testid="stMain"]');
        const find = re => [...main.querySelectorAll('button, h3')]
            .find(e => re.test(e.innerText.trim()));
        const box = e => e ? e.getBoundingClientRect().bottom : null;
        return {next: box(find(/^Next/)), previous: box(find(/Previous$/)),
                step: box(find(/^1\\. /)), height: window.innerHeight};
    }""")
    page.close()
    for name in ("next", "previous", "step"):
        assert boxes[name] is not None and boxes[name] <= boxes["height"], boxes
