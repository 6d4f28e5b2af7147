"""One real-browser test: Debian's Chromium, driven by Playwright, against the app served on
127.0.0.1. Load, see the heatmap, type a sentence, change the head, take screenshots."""

from __future__ import annotations

import pytest

from app_server import CHROMIUM, running_app
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app on 127.0.0.1; at the end, its log must hold no Streamlit warning."""
    with running_app(tmp_path_factory.mktemp("server") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        yield b
        b.close()


def _heatmap_title(page) -> str:
    return page.locator(".js-plotly-plot .gtitle").first.text_content(timeout=60_000) or ""


def _wait_title(page, words: str) -> None:
    page.wait_for_function(
        "w => [...document.querySelectorAll('.js-plotly-plot .gtitle')]"
        ".some(t => t.textContent.toLowerCase().includes(w))", arg=words, timeout=90_000)


def _wait_x_label(page, word: str) -> None:
    page.wait_for_function(
        "w => [...document.querySelectorAll('.js-plotly-plot .xtick text')]"
        ".some(t => t.textContent.toLowerCase().includes(w))", arg=word, timeout=90_000)


# The first (big) heatmap's key labels as strings, or null while it has none: while Streamlit
# replaces a figure, the plot can briefly be without data or x, and a predicate that throws
# fails wait_for_function at once instead of waiting.
KEYS = ("(() => { const gd = document.querySelector('.js-plotly-plot');"
        " const x = gd && gd.data && gd.data[0] && gd.data[0].x;"
        " return x ? Array.from(x, String) : null; })()")


def _settle(page) -> None:
    """Wait for Streamlit to finish the rerun, so the figures are not being replaced."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"] button')"
        " && !document.querySelector('.stale-element, [data-stale=\"true\"]')",
        timeout=90_000)
    page.wait_for_timeout(700)


def _offline(page) -> list[str]:
    """Abort every request that leaves 127.0.0.1 and return the list of those attempted."""
    outside: list[str] = []

    def route(r):
        host = r.request.url.split("/")[2] if "://" in r.request.url else ""
        if host.split(":")[0] in ("127.0.0.1", "localhost") or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return outside


def test_type_a_sentence_change_a_head_and_pick_one_from_the_overview(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    outside = _offline(page)  # the app must not need a CDN: nothing may leave the machine
    page.goto(server + "/attention", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    assert "layer 0, head 0" in _heatmap_title(page).lower()

    box = page.locator("[data-testid='stSidebar'] textarea")
    box.fill("Zebras graze quietly near the river while birds sing.")
    box.press("Control+Enter")  # a Streamlit text area commits on Ctrl+Enter (or on blur)
    _wait_x_label(page, "zebra")
    page.screenshot(path=str(tmp_path / "typed.png"), full_page=True)

    head = page.get_by_role("slider", name="Head")
    head.focus()
    head.press("ArrowRight")
    head.press("ArrowRight")
    _wait_title(page, "layer 0, head 2")
    page.wait_for_url(lambda url: "head=2" in url, timeout=30_000)  # the link follows

    # Click the overview thumbnail of layer 3, head 5 (plotly's own axis maps give its pixel).
    _settle(page)
    _click_head(page, page.locator(".js-plotly-plot").nth(1), 3, 5)
    _wait_title(page, "layer 3, head 5")
    assert not page.locator("[data-testid='stException']").count()
    assert outside == [], f"the app tried to reach the network: {outside[:5]}"


def test_long_input_is_cut_and_said(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/attention", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    box = page.locator("[data-testid='stSidebar'] textarea")
    box.fill("The quick brown fox jumps over the lazy dog. " * 80)  # ~800 tokens > 512
    box.press("Control+Enter")
    page.get_by_text("were dropped").first.wait_for(timeout=90_000)
    # the run holds the model's whole context, 512 tokens; the map opens on the window of them
    # that fits the screen with readable cells, and says so
    page.get_by_text("This text has 512 tokens").first.wait_for(timeout=90_000)
    page.wait_for_function(
        f"() => {{ const keys = {KEYS}; return !!keys && keys.length > 20 && keys.length < 512; }}",
        timeout=90_000)
    page.screenshot(path=str(tmp_path / "long.png"), full_page=True)
    assert not page.locator("[data-testid='stException']").count()


def test_open_a_head_from_a_shared_link(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/attention?layer=2&head=1&text=Dogs+chase+cats+around+the+garden.",
              wait_until="domcontentloaded")
    _wait_title(page, "layer 2, head 1")
    _wait_x_label(page, "garden")
    page.screenshot(path=str(tmp_path / "head1.png"), full_page=True)
    assert not page.locator("[data-testid='stException']").count()


HOSTILE = [
    '<img src=x onerror="window.__pwned=1">',
    "<script>window.__pwned=1</script>",
    "**bold** [link](javascript:window.__pwned=1) $\\frac{1}{0}$",
    "שלום 日本語 😀 zero\u200bwidth",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_shown_as_text_and_runs_no_script(server, browser, text):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/attention", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    box = page.locator("[data-testid='stSidebar'] textarea")
    box.fill(text)
    box.press("Control+Enter")
    page.wait_for_function(  # the heatmap now holds this text's tokens
        f"n => {{ const keys = {KEYS}; return !!keys && keys.length !== n; }}", arg=13,
        timeout=90_000)
    _settle(page)
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("img[src='x']").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert not page.locator("[data-testid='stException']").count()


SPELL = (f"() => {{ const keys = {KEYS}; return keys ? keys.map(l => l.split('·').slice(1)"
         ".join('·')).join('') : ''; }")


def _spelled(page) -> str:
    """The big heatmap's key tokens joined: "B","o","b","␣",... -> "Bob␣..." (tiny GPT-2)."""
    return page.evaluate(SPELL)


def _wait_spelled(page, text: str) -> None:
    page.wait_for_function(f"t => ({SPELL})() === t", arg=text, timeout=90_000)


def test_two_users_at_once_each_see_only_their_own_model_and_text(server, browser, tmp_path):
    from tiny_models import make_gpt2

    gpt2_dir = make_gpt2(tmp_path / "gpt2")  # a different model: a tiny GPT-2, near char-level
    alice = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    bob = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    # both open at once, on a server that has loaded nothing yet
    alice.goto(server + "/attention?text=Alice+likes+apples+and+pears.", wait_until="domcontentloaded")
    bob.goto(server + "/attention?text=Bob+builds+boats.&model=" + str(gpt2_dir),
             wait_until="domcontentloaded")
    _wait_x_label(alice, "apples")
    _wait_spelled(bob, "Bob␣builds␣boats.")
    # both change at the same time; neither sees the other's text, model or head
    alice.get_by_role("slider", name="Head").focus()
    alice.get_by_role("slider", name="Head").press("ArrowRight")
    box = bob.locator("[data-testid='stSidebar'] textarea")
    box.fill("Bob sails today.")
    box.press("Control+Enter")
    _wait_title(alice, "layer 0, head 1")
    _wait_spelled(bob, "Bob␣sails␣today.")
    _settle(alice)
    _settle(bob)
    assert _spelled(bob) == "Bob␣sails␣today."
    assert "alice" in _spelled(alice) and "sails" not in _spelled(alice)
    assert "head 0" in _heatmap_title(bob).lower()  # Alice's slider did not move Bob's head
    assert "12 heads" in alice.get_by_text("MiniLM:").first.text_content()
    assert "minilm" not in bob.locator("[data-testid='stMain']").inner_text().lower()
    for page in (alice, bob):
        assert not page.locator("[data-testid='stException']").count()
        assert not page.locator("[data-testid='stAlert']").filter(
            has_text="Could not load").count()


def test_training_in_one_session_does_not_freeze_another(server, browser):
    alice = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    bob = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    bob.goto(server + "/attention?text=Bob+reads+while+Alice+trains.", wait_until="domcontentloaded")
    _wait_x_label(bob, "reads")
    alice.goto(server + "/training", wait_until="domcontentloaded")
    steps = alice.get_by_role("slider", name="Steps")
    steps.wait_for(timeout=90_000)
    _settle(alice)
    steps.focus()
    steps.press("End")  # the longest run the page allows
    _settle(alice)
    alice.locator(".st-key-train_start button").click()
    stop = alice.locator(".st-key-train_stop button")  # the page's own Stop, not Streamlit's
    stop.wait_for(timeout=60_000)  # training is running in Alice's session

    head = bob.get_by_role("slider", name="Head")
    head.focus()
    for expected in (1, 2, 3):  # Bob keeps working, and every change is drawn
        head.press("ArrowRight")
        _wait_title(bob, f"layer 0, head {expected}")
    assert stop.is_visible()  # ... while Alice's run was still going
    stop.click()
    stop.wait_for(state="detached", timeout=60_000)  # Stop works: the run ends
    alice.wait_for_function("() => !document.querySelector('.st-key-train_start button')"
                            ".disabled", timeout=60_000)  # and a new run may start
    for page in (alice, bob):
        assert not page.locator("[data-testid='stException']").count()


def _click_head(page, grid, layer: int, head: int, n_heads: int = 12) -> None:
    """Click the cell of (layer, head) in a layers × heads grid that has a 'pick a head' trace."""
    grid.scroll_into_view_if_needed()
    xy = grid.evaluate("""(gd, i) => {
        const k = gd._fullData.findIndex(d => d.name === 'pick a head');
        const pt = gd.calcdata[k][i];
        const L = gd._fullLayout, t = gd._fullData[k];
        const xa = L[t.xaxis.replace('x', 'xaxis')], ya = L[t.yaxis.replace('y', 'yaxis')];
        return [xa._offset + xa.c2p(pt.x), ya._offset + ya.c2p(pt.y)];
    }""", layer * n_heads + head)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + xy[0], box["y"] + xy[1])


def test_clicking_a_head_in_the_statistics_grid_opens_it(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(server + "/heads", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    _settle(page)
    if page.get_by_text("Page not found").count():  # Streamlit's first-visit notice (#9992)
        page.keyboard.press("Escape")
        page.get_by_text("Page not found").wait_for(state="detached", timeout=10_000)
    _click_head(page, page.locator(".js-plotly-plot").first, 2, 5)
    _wait_title(page, "layer 2, head 5")  # now on the attention page, with that head
    assert not page.locator("[data-testid='stException']").count()


def test_stale_elements_dim_in_one_step_not_a_fade(server, browser):
    """ui/page_style.py: a stale element dims after 0.5 s in one step (no per-frame fade).
    Marking a real element container stale checks the selector matches Streamlit's DOM."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/attention", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    _settle(page)
    timing = page.evaluate("""() => {
        const box = document.querySelector('.js-plotly-plot')
            .closest('[data-testid="stElementContainer"]');
        const before = getComputedStyle(box).transitionDuration;
        box.setAttribute('data-stale', 'true');
        const s = getComputedStyle(box);
        return [before, s.transitionProperty, s.transitionDuration, s.transitionDelay];
    }""")
    assert timing[1:] == ["opacity", "0s", "0.5s"], timing
    page.close()


def test_heatmap_and_overview_margins_already_fit_so_plotly_draws_once(server, browser):
    """viz/style.py: each figure's margins fit its tick labels and colour bar, so plotly never
    widens them (widening means a second full draw on every slider move). Checked on a short
    text, a text with many and with hidden tick labels, and wide characters."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/attention", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    box = page.locator("[data-testid='stSidebar'] textarea")
    filler = "Every student types a sentence and watches the heads attend. "
    for word, text in [("zebra", "Zebras graze."),
                       ("apple", "apple 東京は日本の首都です 🦓"),
                       ("garden", "garden " + filler * 10), ("river", "river " + filler * 20)]:
        box.fill(text)
        box.press("Control+Enter")
        page.wait_for_function(
            f"w => {{ const keys = {KEYS}; return !!keys && keys.some("
            "l => l.toLowerCase().includes(w)); }", arg=word, timeout=90_000)
        _settle(page)
        sizes = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(
            gd => [gd.layout.title.text, ['l', 'r', 't', 'b'].map(
                k => [gd.layout.margin[k], Math.round(gd._fullLayout._size[k])])])""")
        assert len(sizes) == 2, sizes  # the heatmap and the overview
        for title, sides in sizes:
            assert all(asked == drawn for asked, drawn in sides), (word, title, sides)
    page.close()
