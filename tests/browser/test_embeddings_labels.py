"""Chromium: the embeddings page's scatter plots (tokens by PCA; queries and keys) never draw
two point labels on top of each other, at 1400 and 800 px, for a short sentence (13 tokens)
and a long text (325 tokens). The labels used to pile up into a blob."""

from __future__ import annotations

import urllib.parse

import pytest

from test_narrow import SHORT, _open, browser, server  # noqa: F401  (fixtures)
from ui.examples import LONG

pytestmark = pytest.mark.browser

# For each scatter plot: its title, how many labels it draws, and every pair of labels whose
# boxes on screen overlap by more than a pixel each way.
OVERLAPS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
  const boxes = [...gd.querySelectorAll('.scatterlayer .textpoint text')]
    .filter(t => t.textContent.length)
    .map(t => { const r = t.getBoundingClientRect();
                return [r.left, r.top, r.right, r.bottom, t.textContent]; });
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (Math.min(a[2], b[2]) - Math.max(a[0], b[0]) > 1
        && Math.min(a[3], b[3]) - Math.max(a[1], b[1]) > 1) overlaps.push(a[4] + ' / ' + b[4]);
  }
  return {title: gd.querySelector('.gtitle')?.textContent || '', labels: boxes.length,
          overlaps};
})"""


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("text", [SHORT, LONG], ids=["short", "long"])
def test_scatter_labels_never_overlap(server, browser, width, text):  # noqa: F811
    # tall enough for the whole page: a figure below the fold may not be drawn yet
    page = browser.new_page(viewport={"width": width, "height": 5000})
    query = urllib.parse.urlencode({"model": "minilm", "text": text})
    _open(page, f"{server}/embeddings?{query}")
    # wait for the two scatter plots themselves, by title, with their labels drawn: every
    # Plotly figure has a scatter layer, so counting layers can pass before the PCA is drawn
    page.wait_for_function(f"() => ({OVERLAPS})().filter(f => (f.title.startsWith('PCA of')"
                           " || f.title.includes('queries and')) && f.labels >= 3).length >= 2",
                           timeout=90_000)
    figures = {f["title"]: f for f in page.evaluate(OVERLAPS)}
    page.close()
    scatters = [f for title, f in figures.items()
                if title.startswith("PCA of") or "queries and" in title]
    assert len(scatters) == 2, list(figures)
    for fig in scatters:
        assert fig["labels"] >= 3, fig  # the outliers are still named on the plot
        assert not fig["overlaps"], fig
