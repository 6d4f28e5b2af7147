"""Every page at the sizes a class meets: an 800 px window with the sidebar open, a 1280 × 720
projector. Nothing may be cut with "…", clipped or pushed past the window (a wide table may
scroll inside itself), no figure's title may run past the figure's edge, no word may break
between its letters, no figure text may shrink below 8 px, no title may leave a blank line
under itself, and no page may show our internal words ("seed 004") or a server path.
Also: the main heatmap of a short sentence gets a plot of at least 400 px on a 1400 × 900
screen, with 12 px labels and its colour bar beside it.

The pages come from their declarations (teaching/pages.py), so a new page is checked too.
"""

from __future__ import annotations

import os
import re
import urllib.parse
import urllib.request

import pytest

pytestmark = pytest.mark.browser

from app_server import CHROMIUM, running_app  # noqa: E402
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
SHORT = "The cat sat on the mat because it was warm."
INTERNAL = re.compile(r"seed 0|(?<![\w.])/(?:tmp|home|root|var|usr|private|Users)/|[A-Z]:\\\\",
                      re.IGNORECASE)

# Run in the page: everything on it that is cut, clipped or wider than its box. Figures (SVG
# that plotly sizes itself) and data frames (a wide table scrolls inside itself) are left out.
PROBLEMS = r"""() => {
  const found = [], vw = window.innerWidth, de = document.documentElement;
  if (de.scrollWidth > vw + 1) found.push(`the page is ${de.scrollWidth} px wide in ${vw}`);
  const skip = '[data-testid="stDataFrame"], [data-testid="stTable"], .js-plotly-plot';
  const roots = document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebar"]');
  const name = el => `${el.tagName.toLowerCase()} “${(el.innerText || el.textContent || '')
      .trim().replace(/\s+/g, ' ').slice(0, 60)}”`;
  for (const root of roots) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      // inputs scroll their own text; a 1 px box is a screen-reader-only label
      if (el instanceof SVGElement || el.closest(skip) || el.matches('input, textarea')) continue;
      const cs = getComputedStyle(el);
      if (cs.display === 'none' || cs.visibility === 'hidden' || el.clientWidth <= 2) continue;
      if (el.scrollWidth <= el.clientWidth + 1) continue;
      if (cs.textOverflow === 'ellipsis') found.push(`cut with “…”: ${name(el)}`);
      else if (['hidden', 'clip', 'auto', 'scroll'].includes(cs.overflowX) && name(el).length > 6)
        found.push(`wider than its box (${el.scrollWidth} > ${el.clientWidth}): ${name(el)}`);
    }
    // a word broken between two of its letters: its characters sit on two lines
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      const other = ', svg, .katex, code, pre, [data-testid="stTooltipIcon"]';
      if (!el || el.closest(skip + other)) continue;
      for (const m of node.textContent.matchAll(/[A-Za-z]{4,}/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
                              .map(r => Math.round(r.top)));
        if (tops.size > 1) found.push(`“${m[0]}” breaks across lines in ${name(el)}`);
      }
    }
  }
  // a Vega-Lite chart (the start page's) drawn wider than its column is cut by it
  for (const v of document.querySelectorAll('.vega-embed canvas, .vega-embed svg')) {
    const column = v.closest('[data-testid="stVerticalBlock"]') || v.parentElement;
    const r = v.getBoundingClientRect(), c = column.getBoundingClientRect();
    if (r.width && r.right > c.right + 1)
      found.push(`a chart ${Math.round(r.right - c.right)} px wider than its column`);
  }
  // a page title whose (hidden) link icon wrapped onto a line of its own: a blank line under it
  for (const h of document.querySelectorAll('[data-testid="stMain"] h1')) {
    const text = document.createTreeWalker(h, NodeFilter.SHOW_TEXT).nextNode();
    if (!text) continue;
    const range = document.createRange();
    range.selectNodeContents(text);
    if (h.getBoundingClientRect().height - range.getBoundingClientRect().height > 45)
      found.push(`a blank line under the title ${name(h)}`);
  }
  // a figure's title, subtitle or annotation that runs past the figure is cut by its edge
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const box = gd.getBoundingClientRect();
    for (const t of gd.querySelectorAll('.infolayer text, .annotation-text')) {
      const r = t.getBoundingClientRect();
      if (r.width && (r.right > box.right + 1 || r.left < box.left - 1))
        found.push(`figure text past the figure's edge: “${t.textContent.slice(0, 60)}”`);
    }
    // plotly shrinks a heatmap's cell text to fit its cell: below 8 px nobody can read it
    for (const t of gd.querySelectorAll('text')) {
      const px = parseFloat(getComputedStyle(t).fontSize);
      if (t.textContent.trim() && px < 8)
        found.push(`figure text too small to read (${px} px): “${t.textContent.slice(0, 20)}”`);
    }
  }
  return [...new Set(found)];
}"""


def _page_paths() -> list[str]:
    """The url path of every declared page (teaching/pages.py), so a new page is checked too."""
    from teaching.pages import PAGE_SPECS

    return [spec.path for spec in PAGE_SPECS]


PATHS = _page_paths()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app on 127.0.0.1; at the end, its log must hold no Streamlit warning."""
    port = int(os.environ.get("TEST_APP_PORT") or 0) or None  # a fixed one on a shared machine
    with running_app(tmp_path_factory.mktemp("server") / "server.log", port) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        yield b
        b.close()


def _open(page, url: str) -> None:
    """Go to `url` and wait until the page has drawn and Streamlit has finished the run."""
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function(  # some text drawn (the first element is the style block)
        "() => (document.querySelector('[data-testid=\"stMain\"]') || {}).innerText?.length"
        " > 40", timeout=120_000)
    if page.get_by_text("Page not found").count():  # Streamlit's first-visit notice (#9992)
        page.keyboard.press("Escape")
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"] button')"
        " && !document.querySelector('[data-stale=\"true\"]')", timeout=180_000)
    page.wait_for_timeout(1500)
    page.wait_for_function(  # each figure has shrunk to its column (it may draw wide first)
        "() => [...document.querySelectorAll('.js-plotly-plot')].every(gd =>"
        " gd.getBoundingClientRect().width <= gd.parentElement.getBoundingClientRect().width + 1)",
        timeout=20_000)


def _settled_problems(page) -> list[str]:
    """PROBLEMS once the figures have settled: Plotly redraws a figure that shrank to its
    column a moment later (on a busy machine, seconds), so a figure's text past its edge
    counts only if it is still there after a few looks."""
    for _ in range(6):
        problems = page.evaluate(PROBLEMS)
        if not any("past the figure's edge" in p for p in problems):
            break
        page.wait_for_timeout(2000)
    return problems


@pytest.mark.parametrize("size, model", [((800, 900), "minilm"), ((800, 900), "tiny-chars"),
                                         ((1280, 720), "minilm")],
                         ids=["800x900-minilm", "800x900-tiny-chars", "1280x720-minilm"])
def test_every_page_fits_and_says_nothing_internal(server, browser, size, model):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    query = urllib.parse.urlencode({"model": model, "text": SHORT})
    report = {}
    for path in PATHS:
        _open(page, f"{server}/{path}?{query}")
        problems = _settled_problems(page)
        text = page.locator("[data-testid='stMain']").inner_text() + page.locator(
            "[data-testid='stSidebar']").inner_text()
        problems += [f"internal words on screen: “{m.group(0)}”"
                     for m in INTERNAL.finditer(text)]
        if page.locator("[data-testid='stException']").count():
            problems.append("an exception is shown")
        if problems:
            report[path or "/"] = problems
    context.close()
    assert not report, "\n".join(f"{p}: {msgs}" for p, msgs in report.items())


def test_a_short_sentence_gets_a_big_heatmap_with_its_colour_bar_beside_it(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    path = next(p for p in PATHS if p == "attention")
    _open(page, f"{server}/{path}?" + urllib.parse.urlencode({"model": "minilm", "text": SHORT}))
    page.wait_for_selector(".js-plotly-plot .nsewdrag", timeout=90_000)
    try:  # the figure of this sentence (13 tokens), once drawn at its final size
        page.wait_for_function("""() => { const gd = document.querySelector('.js-plotly-plot');
            const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
            return gd.data[0].x.length === 13 && r.width >= 400 && r.height >= 400; }""",
                               timeout=30_000)
    except Exception:  # noqa: BLE001 - the assertions below say what is wrong
        pass
    size = page.evaluate("""() => {
        const gd = document.querySelector('.js-plotly-plot');
        const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
        const bar = gd.querySelector('.colorbar').getBoundingClientRect();
        const fonts = [...gd.querySelectorAll('.xtick text, .ytick text')]
            .map(t => parseFloat(getComputedStyle(t).fontSize));
        return {w: plot.width, h: plot.height, gap: bar.left - plot.right,
                ticks: gd.querySelectorAll('.ytick text').length, font: Math.min(...fonts)};
    }""")
    page.close()
    assert size["ticks"] == 13, size  # [CLS] + 11 tokens + [SEP], every one labelled
    assert size["w"] >= 400 and size["h"] >= 400, size
    assert size["font"] >= 12, size
    assert 0 <= size["gap"] <= 40, size  # the colour bar right beside the plot
