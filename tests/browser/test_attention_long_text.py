"""A long text on the attention page, in Chromium at 1400 and 800 px: the 325-token example
(ui.examples.LONG on MiniLM) and tiny-induction's 43 tokens. Every heatmap cell is at least the
readable minimum wide and high (the page opens on a window of the text that fits), no two tick
labels overlap, hovering a cell names both of its tokens with their positions, and hovering a
token in the line view shows only that token's lines and names where they go."""

from __future__ import annotations

import html
import urllib.parse

import pytest

from tests.browser.test_narrow import _open, browser, server  # noqa: F401 - fixtures
from tests.browser.test_projector_room import MAIN_HEATMAP
from ui.examples import LONG, SHORT
from viz.heatmap_fit import MIN_CELL_PX

pytestmark = pytest.mark.browser

SCREENS = [(1400, 900), (800, 900)]
CASES = [("minilm", LONG), ("tiny-induction", SHORT)]

STABLE = r"""() => {
  const gd = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
      .find(g => g.data && g.data.some(t => t.type === 'heatmap'));
  if (!gd) return null;
  const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
  return [gd.data[0].x.length, Math.round(r.width), Math.round(r.height)].join(',');
}"""


def _link(server: str, model: str, text: str, **extra) -> str:
    query = {"model": model, "text": text} | extra
    return f"{server}/attention?{urllib.parse.urlencode(query)}"


def _settled(page) -> None:
    """Wait until the heatmap stops changing: the page measures its column once it is drawn
    and draws the map again for that width."""
    last, same = None, 0
    for _ in range(60):
        now = page.evaluate(STABLE)
        same = same + 1 if now is not None and now == last else 0
        if same >= 3:
            return
        last = now
        page.wait_for_timeout(500)


def _hover_cell(page, row: int, col: int) -> tuple[str, str, str]:
    """Hover cell (row, col) of the main heatmap: the hover text, and that cell's labels."""
    box = page.evaluate(r"""([row, col]) => {
      const gd = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
          .find(g => g.data && g.data.some(t => t.type === 'heatmap'));
      gd.scrollIntoView({block: 'center'});
      const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
      const nx = gd.data[0].x.length, ny = gd.data[0].y.length;
      return {x: r.left + (col + 0.5) * r.width / nx, y: r.top + (row + 0.5) * r.height / ny,
              q: gd.data[0].y[row], k: gd.data[0].x[col]};
    }""", [row, col])
    page.mouse.move(box["x"], box["y"])
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
    text = page.evaluate("() => document.querySelector('.hoverlayer .hovertext').textContent")
    return text, html.unescape(box["q"]), html.unescape(box["k"])


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}px")
@pytest.mark.parametrize("model, text", CASES, ids=["minilm-325", "tiny-induction-43"])
def test_cells_stay_readable_labels_never_overlap_and_hover_names_the_tokens(
        server, browser, screen, model, text):  # noqa: F811
    context = browser.new_context(viewport={"width": screen[0], "height": screen[1]})
    page = context.new_page()
    _open(page, _link(server, model, text))
    _settled(page)
    size = page.evaluate(MAIN_HEATMAP)
    said = page.locator('[data-testid="stMain"]').inner_text()
    row, col = (size["n"] - 1, max(0, size["n"] - 3)) if size else (0, 0)
    hover = _hover_cell(page, row, col) if size else None
    context.close()

    assert size is not None, "no heatmap"
    cell_x, cell_y = size["w"] / size["n"], size["h"] / size["n"]
    assert min(cell_x, cell_y) >= MIN_CELL_PX - 0.05, (size, screen)
    assert not size["overlaps"], size["overlaps"]
    assert size["shown"]["x"] >= 3 and size["shown"]["y"] >= 3, size  # labels are written
    whole = size["n"] == (325 if model == "minilm" else 43)
    if not whole:  # zoomed to a window: the page says so, and how the labels are thinned
        assert "too many to draw readably" in said and "Show tokens" in said
    if size["shown"]["x"] < size["n"] or size["shown"]["y"] < size["n"]:
        assert "Not every label fits" in said
    text_shown, q, k = hover
    assert f"query {q} → key {k}" in text_shown, (text_shown, q, k)
    assert q.split("·")[0].isdigit() and k.split("·")[0].isdigit()  # positions named


def test_hovering_a_token_isolates_its_lines_at_any_length(server, browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    _open(page, _link(server, "minilm", LONG, view="Token lines", layer="1", head="3"))
    svg = page.locator("svg[data-testid=token-lines]")
    svg.wait_for(timeout=60_000)
    total = svg.evaluate("s => s.querySelectorAll('line').length")
    tokens = svg.evaluate("s => s.querySelectorAll('text[data-side=query]').length")
    token = svg.locator("text[data-side=query]").nth(7)
    token.scroll_into_view_if_needed()
    token.hover()
    page.wait_for_timeout(300)
    mine = svg.evaluate("""s => { const t = s.querySelectorAll('text[data-side=query]')[7];
        const y = t.getAttribute('y');
        const on = [...s.querySelectorAll('line.on')];
        return {on: on.length, fromIt: on.filter(l => l.getAttribute('y1') === y).length,
                shown: [...s.querySelectorAll('line')].filter(l =>
                    getComputedStyle(l).display !== 'none').length,
                text: t.firstChild.textContent, title: t.querySelector('title').textContent};
    }""")
    page.mouse.move(5, 5)  # away: every line again
    page.wait_for_timeout(300)
    after = svg.evaluate("s => [...s.querySelectorAll('line')].filter(l => "
                         "getComputedStyle(l).display !== 'none').length")
    context.close()
    assert tokens == 325
    assert mine["text"].startswith("7·")
    assert mine["title"].startswith(mine["text"] + " → ")  # names where its lines go
    assert 0 < mine["on"] == mine["fromIt"] == mine["shown"] < total, mine
    assert after == total
