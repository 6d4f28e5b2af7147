"""Hostile text on every page through AppTest (issue 8, "Hostile input and faults").

For every page under app_pages/ and a suite of hostile texts in the sidebar: no exception,
nothing rendered as raw HTML (no `st.html` other than the app's own constant style block, no
component or iframe, no Markdown element with `allow_html`), user text never turned into a
Markdown link, a clear message where the text was cut, and a friendly prompt (st.info, not an
error) for an empty text.

Every text runs on the attention page (the default); the other pages get a representative
subset, to keep the whole file at a few minutes on a busy 2-core machine.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.proto.Markdown_pb2 import Markdown as MarkdownProto  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_files import page_file, page_names  # noqa: E402
from page_links import switch  # noqa: E402

from ui import page_style  # noqa: E402
from ui.cache import get_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 180
DEFAULT_PAGE = "attention"
PAGES = page_names()  # a page exists when its file (or folder) exists
# Pages that analyse the sidebar text stop through ui.sidebar.require_trace, which shows the
# prompt for an empty text and the note when the text was cut.
SIDEBAR_PAGES = {p for p in PAGES
                 if "require_trace(" in page_file(p).read_text()}

HOSTILE = {
    "empty": "",
    "whitespace": "   \n\t \r\n  ",
    "100k": "word " * 20_000,  # 100,000 characters, far beyond MiniLM's 512 tokens
    "emoji": "😀🚀👩‍👩‍👧 émoji 🇺🇦 ﷽",
    "cjk": "日本語のテキストと中文文本，한국어",
    "rtl": "שלום עולם مرحبا بالعالم \u202eevil\u202c",
    "zero_width": "zero\u200bwidth\u200c\u200d\u2060\ufeffjoin",
    "rtl_zero_width": "שלום\u200b עולם\u200d مرحبا\u2060\ufeff",
    "control": "ctrl\x00\x07\x1b[31mchars\x7f\x08",
    "script": "<script>alert(1)</script>",
    "img": "<img src=x onerror=alert(1)>",
    "markdown": "**bold** [x](javascript:alert(1)) # h\n# heading\n---\n| a | b |",
    "latex": r"$\frac{1}{0}$ $$x$$ \(y\) $\href{javascript:alert(1)}{z}$",
}
# The representative subset for every page other than the default one
# (ATTENTION_LAB_HOSTILE_ALL=1 runs every text on every page).
SUBSET = tuple(HOSTILE) if os.environ.get("ATTENTION_LAB_HOSTILE_ALL") else (
    "empty", "100k", "img", "rtl_zero_width", "control", "latex")

# (page, text) -> why it is expected to fail. A page that raises on a hostile text is not
# fixed here: its case is marked xfail(strict=True) so its owner sees it and removes the entry.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}

# Element types that would put raw HTML or foreign markup on the page.
RAW_HTML_TYPES = ("html", "iframe", "component_instance", "bidi_component")
# A Markdown link or image whose target is the user's javascript: payload, unescaped.
JS_LINK = re.compile(r"(?<!\\)\]\(\s*javascript:", re.IGNORECASE)


def _cases() -> list:
    pairs = [(DEFAULT_PAGE, name) for name in HOSTILE]
    pairs += [(page, name) for page in PAGES if page != DEFAULT_PAGE for name in SUBSET]
    return [pytest.param(page, name, id=f"{page[:-3]}-{name}",
                         marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[page, name])]
                         if (page, name) in KNOWN_FAILURES else [])
            for page, name in pairs]


def _texts(at: AppTest, *kinds: str) -> list[str]:
    return [str(el.value) for kind in kinds for el in at.get(kind)]


def _markdown_nodes(at: AppTest) -> list:
    """markdown, caption, latex and divider elements: all carry the Markdown proto."""
    return [node for node in at if isinstance(getattr(node, "proto", None), MarkdownProto)]


def _run(page: str, text: str, key: str = "sb_text") -> AppTest:
    """Open the app with its default text, then go to `page` and type `text`: one rerun."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    switch(at, page)
    widget = at.text_area(key=key) if key == "sb_text" else at.text_input(key=key)
    widget.input(text)
    return at.run()


OWN_COMPONENTS = ("attention_lab_column_width", "attention_lab_token_lines")


def _own_component(el) -> bool:
    """One of the app's own components (ui/column_width.py, app_pages/attention/token_lines.py): constant code
    with no HTML of its own, which sets whatever data it gets as text, never as HTML."""
    proto = el.proto
    return (proto.component_name in OWN_COMPONENTS and not proto.html_content
            and not any(sink in proto.js_content for sink in ("innerHTML", "outerHTML",
                                                              "insertAdjacentHTML")))


def _assert_no_raw_html(at: AppTest, where: str) -> None:
    """Nothing rendered as raw HTML anywhere (main area and sidebar), no javascript: link.
    The exceptions are the app's own constant style block (ui/page_style.py) and its own
    components, which set text, never HTML (`_own_component`)."""
    for kind in RAW_HTML_TYPES:
        found = [el for el in at.get(kind)
                 if not (kind == "html" and el.proto.body == page_style.STYLE)
                 and not (kind == "bidi_component" and _own_component(el))]
        assert not found, f"{where}: a {kind} element is on the page"
    markdown = _markdown_nodes(at)
    unsafe = [n.proto.body[:80] for n in markdown if n.proto.allow_html]
    assert not unsafe, f"{where}: Markdown with allow_html: {unsafe}"
    bodies = [n.proto.body for n in markdown] + _texts(
        at, "error", "warning", "info", "success", "title", "header", "subheader")
    assert not any(JS_LINK.search(b) for b in bodies), f"{where}: javascript: link"


@pytest.mark.parametrize(("page", "name"), _cases())
def test_hostile_text(page: str, name: str):
    text = HOSTILE[name]
    at = _run(page, text)
    assert not at.exception, f"{page} / {name}: {[e.value for e in at.exception]}"
    assert at.text_area(key="sb_text").value == text

    assert _markdown_nodes(at), "the page shows at least its captions"
    _assert_no_raw_html(at, f"{page} / {name}")

    messages = " ".join(_texts(at, "warning", "info", "caption", "error")).lower()
    if page in SIDEBAR_PAGES:
        if not text.strip():  # a friendly prompt, not an error
            infos = " ".join(_texts(at, "info")).lower()
            assert "type some text" in infos, f"{page} / {name}: no prompt in {infos[:300]!r}"
            assert not at.error and not at.sidebar.error, [e.value for e in at.get("error")]
        if len(text) > 50_000:  # beyond the model's context: the page says tokens were cut
            assert any(w in messages for w in ("dropped", "cut", "left out")), (
                f"{page} / {name}: no message that the text was cut in {messages[:400]!r}")
            # the context of the model the page runs (a decoder-lab page opens on a decoder)
            context = get_model(at.session_state["sb_model_choice"]).cfg.n_ctx
            assert f"{context:,}" in messages or str(context) in messages, messages[:400]
    if name not in ("empty", "whitespace", "100k") and page in SIDEBAR_PAGES:
        # A short text that is not blank runs: no error box about it.
        assert not at.error, f"{page} / {name}: {[e.value for e in at.error]}"


@pytest.mark.parametrize("page", [p for p in ("attention", "walkthrough") if p in PAGES])
@pytest.mark.parametrize("name", ["100k", "img", "markdown", "rtl_zero_width", "control"])
def test_hostile_second_sentence(page: str, name: str):
    """The optional second sentence (sb_pair) is user text too."""
    at = _run(page, HOSTILE[name], key="sb_pair")
    assert not at.exception, f"{page} / pair {name}: {[e.value for e in at.exception]}"
    _assert_no_raw_html(at, f"{page} / pair {name}")
    if len(HOSTILE[name]) > 50_000:
        messages = " ".join(_texts(at, "warning", "info", "caption")).lower()
        assert "dropped" in messages or "cut" in messages, messages[:400]


def test_training_page_own_text_is_hostile_too():
    """The training page's own text box (task "your own text") takes hostile text too."""
    assert "training" in PAGES
    at = _run("training", HOSTILE["img"])
    at.selectbox(key="train_task").set_value("own").run()  # a missing key fails the test
    assert not at.exception, at.exception
    assert at.text_area(key="train_text") is not None
    for name in ("img", "markdown", "control", "rtl_zero_width", "empty"):
        at.text_area(key="train_text").input(HOSTILE[name]).run()
        assert not at.exception, f"training own text / {name}: {at.exception}"
        _assert_no_raw_html(at, f"training own text / {name}")
