"""Projector mode in a room: the screens a class projector has (1024 × 768, 1280 × 720), opened
from a `?projector=1` link. The sidebar is out of the way, the main heatmap's plot is at least
60% of the screen's smaller side, no tick label overlaps another, and no figure of the pages a
class sees is smaller than in normal mode at the same screen size.
"""

from __future__ import annotations

import urllib.parse

import pytest

from tests.browser.figures import wait_for_figure
from tests.browser.test_narrow import _open, browser, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

SHORT = "The cat sat on the mat because it was warm."  # 13 MiniLM tokens, 43 characters
ROOM_SCREENS = [(1024, 768), (1280, 720)]
# Pages a class is shown (a lesson's first step), every figure on them at least as large as in
# normal mode.
CLASS_PAGES = [("attention", "minilm"), ("lessons?lesson=reading-heatmaps&step=1", "minilm"),
               ("patching", "tiny-induction"), ("logit-lens", "tiny-chars"), ("effect", "minilm")]

# The main heatmap (the first plotly figure holding a heatmap): its plot area, and every pair
# of neighbouring tick labels on one axis that overlap. Two labels overlap when the strips
# they are written in (parallel, one font size across) cross, measured between their anchor
# points, and they are not apart along their own direction either.
MAIN_HEATMAP = r"""title => {
  const gd = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
      .find(g => g.data && g.data.some(t => t.type === 'heatmap')
            && (!title || String(g.layout.title.text).includes(title)));
  if (!gd) return null;
  const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const overlaps = [], shown = {};
  for (const [axis, angle] of [['x', gd._fullLayout.xaxis.tickangle], ['y', 0]]) {
    const rad = (Number.isFinite(angle) ? angle : 0) * Math.PI / 180;
    const dir = [Math.cos(rad), Math.sin(rad)];
    const labels = [...gd.querySelectorAll(`.${axis}tick text`)].filter(t => t.textContent)
      .map(t => {
        const svg = t.ownerSVGElement, p = svg.createSVGPoint();
        p.x = +t.getAttribute('x') || 0; p.y = +t.getAttribute('y') || 0;
        const a = p.matrixTransform(t.getScreenCTM());
        return {text: t.textContent, x: a.x, y: a.y, w: t.getComputedTextLength(),
                font: parseFloat(getComputedStyle(t).fontSize)};
      })
      .sort((a, b) => axis === 'x' ? a.x - b.x : a.y - b.y);
    shown[axis] = labels.length;
    for (let i = 1; i < labels.length; i++) {
      const a = labels[i - 1], b = labels[i], d = [b.x - a.x, b.y - a.y];
      const across = Math.abs(d[0] * dir[1] - d[1] * dir[0]);
      const along = Math.abs(d[0] * dir[0] + d[1] * dir[1]);
      if (across < 0.9 * Math.max(a.font, b.font) && along < (a.w + b.w) / 2)
        overlaps.push(`${axis}: “${a.text}” and “${b.text}” (${across.toFixed(1)} px apart)`);
    }
  }
  const fonts = [...gd.querySelectorAll('.xtick text, .ytick text')]
      .map(t => parseFloat(getComputedStyle(t).fontSize));
  return {w: plot.width, h: plot.height, n: gd.data[0].x.length, overlaps, shown,
          font: Math.min(...fonts),
          x: [...gd.querySelectorAll('.xtick text')].map(t => t.textContent)};
}"""

FIGURE_WIDTHS = r"""() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .map(gd => Math.round(gd.querySelector('.nsewdrag')?.getBoundingClientRect().width || 0))"""
SIDEBAR_WIDTH = r"""() => {
  const s = document.querySelector('[data-testid="stSidebar"]');
  return s ? s.getBoundingClientRect().width : 0; }"""


def _link(server: str, path: str, model: str, text: str, projector: bool) -> str:
    path, _, extra = path.partition("?")
    query = dict(urllib.parse.parse_qsl(extra)) | {"model": model, "text": text}
    query |= {"projector": "1"} if projector else {}
    return f"{server}/{path}?{urllib.parse.urlencode(query)}"


def _main_heatmap(page, n_tokens: int) -> dict:
    page.wait_for_selector(".js-plotly-plot .nsewdrag", timeout=90_000)
    try:  # the figure of this text, once drawn at its final size (it may draw wide first)
        page.wait_for_function(
            "n => { const gd = document.querySelector('[data-testid=\"stMain\"] .js-plotly-plot');"
            " return gd && gd.data[0].x.length === n && gd.getBoundingClientRect().width <="
            " gd.parentElement.getBoundingClientRect().width + 1; }",
            arg=n_tokens, timeout=30_000)
    except Exception:  # noqa: BLE001 - the assertions below say what is wrong
        pass
    page.wait_for_timeout(1500)  # plotly redraws a figure that shrank to its column
    return page.evaluate(MAIN_HEATMAP)


@pytest.mark.parametrize("screen", ROOM_SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("model, text, n_tokens", [
    ("minilm", SHORT, 13), ("tiny-chars", SHORT, 43), ("tiny-induction", SHORT, 43)],
    ids=["minilm-13", "tiny-chars-43", "tiny-induction-43"])
def test_projector_heatmap_fills_the_room_screen(server, browser, screen, model, text,  # noqa: F811
                                                 n_tokens):
    context = browser.new_context(viewport={"width": screen[0], "height": screen[1]})
    page = context.new_page()
    _open(page, _link(server, "attention", model, text, projector=True))
    size = _main_heatmap(page, n_tokens)
    sidebar = page.evaluate(SIDEBAR_WIDTH)
    show = page.get_by_role("button", name="Show the sidebar")
    can_show = show.count() == 1
    context.close()
    assert size is not None and size["n"] == n_tokens, size
    need = 0.6 * min(screen)  # 460 px at 1024 × 768
    assert size["w"] >= need and size["h"] >= need, (size, need)
    assert not size["overlaps"], size["overlaps"]
    assert size["font"] >= 13, size  # labels at least the normal mode's size
    assert sidebar < 10, f"the sidebar takes {sidebar} px"
    assert can_show, "no button brings the sidebar back"


def test_the_sidebar_comes_back_and_goes_again(server, browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    _open(page, _link(server, "attention", "minilm", SHORT, projector=True))
    page.get_by_role("button", name="Show the sidebar").click()
    page.wait_for_function(f"() => ({SIDEBAR_WIDTH})() > 200", timeout=30_000)
    assert page.get_by_text("Projector mode").count() >= 1  # its switch is in the sidebar
    page.get_by_role("button", name="Hide the sidebar").click()
    page.wait_for_function(f"() => ({SIDEBAR_WIDTH})() < 10", timeout=30_000)
    context.close()


@pytest.mark.parametrize("path, model", CLASS_PAGES, ids=[p[:7] for p, _ in CLASS_PAGES])
def test_no_figure_shrinks_when_projector_mode_is_on(server, browser, path, model):  # noqa: F811
    widths = {}
    for projector in (False, True):
        context = browser.new_context(viewport={"width": 1024, "height": 768})
        page = context.new_page()
        _open(page, _link(server, path, model, SHORT, projector))
        # a page may still be computing after its first text shows (a lesson's facts): wait
        # for its figures, then for them to settle
        page.wait_for_selector('[data-testid="stMain"] .js-plotly-plot .nsewdrag',
                               timeout=120_000)
        page.wait_for_timeout(1500)
        widths[projector] = page.evaluate(FIGURE_WIDTHS)
        context.close()
    normal, big = widths[False], widths[True]
    assert normal and len(big) == len(normal), widths
    smaller = [(i, n, b) for i, (n, b) in enumerate(zip(normal, big)) if b < n - 2]
    assert not smaller, f"figures smaller in projector mode (index, normal, projector): {smaller}"


@pytest.mark.parametrize("model, n_tokens", [("minilm", 13), ("tiny-chars", 43)])
def test_on_an_800_px_projector_no_label_overlaps_and_the_plot_still_grows(  # noqa: F811
        server, browser, model, n_tokens):
    context = browser.new_context(viewport={"width": 800, "height": 900})
    page = context.new_page()
    _open(page, _link(server, "attention", model, SHORT, projector=True))
    size = _main_heatmap(page, n_tokens)
    context.close()
    assert size is not None and not size["overlaps"], size
    assert size["w"] >= 400, size  # normal mode at 800 px: 251 (13 tokens), 288 (43)


START_EXAMPLE = r"""() => {
  const cells = document.querySelector('[data-testid="stMain"] .vega-embed .mark-rect');
  const button = [...document.querySelectorAll('button')]
      .find(b => b.innerText.startsWith('Try it with your sentence'));
  const b = button && button.querySelector('p');
  return {plot: cells ? cells.getBoundingClientRect().width : 0,
          lines: b ? b.getBoundingClientRect().height / parseFloat(getComputedStyle(b).lineHeight)
                   : 0};
}"""


def test_the_start_example_grows_in_projector_mode(server, browser):  # noqa: F811
    """The start page's example (a Vega-Lite chart, not plotly) grows with the page's text,
    its plot at least 60% of a 1024 × 768 screen's height, and its button stays one line."""
    seen = {}
    for projector in (False, True):
        context = browser.new_context(viewport={"width": 1024, "height": 768})
        page = context.new_page()
        _open(page, _link(server, "", "minilm", SHORT, projector))
        page.wait_for_selector(".vega-embed .mark-rect", timeout=60_000)
        page.wait_for_timeout(1000)
        seen[projector] = page.evaluate(START_EXAMPLE)
        context.close()
    assert seen[True]["plot"] >= max(0.6 * 768, seen[False]["plot"] + 50), seen
    assert 0 < seen[True]["lines"] < 1.5, seen  # one line of text on the button


def test_compare_fills_the_room_and_keeps_its_changed_labels(server, browser):  # noqa: F811
    """Compare at 1024 × 768 in projector mode: A (and B) stacked were drawn half-page size
    (~330 px plot), and the difference map's labels were thinned to every 2nd token, dropping
    the changed "5·a|o". Now A fills the page and every changed position is labelled."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    _open(page, _link(server, "compare", "tiny-induction", SHORT, projector=True))
    wait_for_figure(page, "B − A, layer")  # below the fold: scrolled to, as a reader would
    page.wait_for_timeout(2500)  # the columns measured, the page run again
    a = page.evaluate(MAIN_HEATMAP, "A: layer")  # titles are wrapped in <b>
    diff = page.evaluate(MAIN_HEATMAP, "B − A, layer")
    context.close()
    assert a["w"] >= 600 and abs(a["w"] - a["h"]) <= 3 and not a["overlaps"], a
    assert {"4·c|d", "5·a|o", "6·t|g"} <= set(diff["x"]) and not diff["overlaps"], diff
