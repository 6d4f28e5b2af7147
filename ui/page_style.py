"""The app's one piece of CSS, a constant: nothing the user typed ever reaches it.

While a rerun is on its way, Streamlit fades the elements it is about to replace ("stale")
with a one-second opacity transition that starts after half a second. The browser repaints
every element on the page for every frame of that fade: on a 2-core machine serving a class,
eight pages fading at once cost more CPU than the server's own work (bench/bench_load.py).
Here the same dimming happens after the same half second, in one step: one repaint.

Narrow screens (an 800 px window with the sidebar open, a 1280 × 720 projector): Streamlit
cuts a widget label that does not fit with "…" ("Aver…" for "Average of heads") and keeps
squeezing columns until words break in the middle. Here labels and buttons wrap onto a second
line instead, and a column is never narrower than COLUMN_MIN: a row of columns that cannot
fit wraps, the last columns going to the next line at full width (Streamlit's rows already
allow wrapping; tests/browser/test_narrow.py checks every page at 800 px).
"""

from __future__ import annotations

import streamlit as st

COLUMN_MIN = "9rem"  # about "Average of heads" beside its switch
WIDE_COLUMN_MIN = "26rem"  # a heatmap with its labels and colour bar
PAIR_COLUMN_MIN = "16rem"  # a short text, or a small bar chart with its labels

# the columns of a row of st.columns made inside a container whose key starts with a prefix
ROW = ('[class*="st-key-{}"] > [data-testid="stLayoutWrapper"] >'
       ' [data-testid="stHorizontalBlock"] > [data-testid="stColumn"]')

STALE_IN_ONE_STEP = (
    '[data-testid="stElementContainer"][data-stale="true"]'
    "{transition: opacity 0s linear 0.5s !important;}"
)
NARROW_SCREENS = (
    # widget labels (toggles, sliders, radios, select boxes) wrap instead of ending in "…"
    '[data-testid="stWidgetLabel"] .stMarkdownEllipsis,'
    '[data-testid="stWidgetLabel"] .stMarkdownEllipsis p'
    "{white-space: normal !important; overflow: visible !important;"
    " text-overflow: clip !important;}"
    # button labels ("◀ Previous") wrap too
    '.stButton button div, .stButton button p, .stDownloadButton button div,'
    ".stDownloadButton button p"
    "{white-space: normal !important; overflow: visible !important;"
    " text-overflow: clip !important;}"
    # a column never narrower than COLUMN_MIN (nor than its row): the row wraps instead
    f'[data-testid="stColumn"]{{min-width: min(100%, {COLUMN_MIN});}}'
    # columns inside a container keyed "wide_…" (two heatmaps side by side, the walkthrough's
    # contents beside its step) stack one under the other below WIDE_COLUMN_MIN each
    f'{ROW.format("wide_")}{{min-width: min(100%, {WIDE_COLUMN_MIN});}}'
    # ... and inside one keyed "pair_…" (the teacher's question beside the class's answers)
    # below PAIR_COLUMN_MIN each
    f'{ROW.format("pair_")}{{min-width: min(100%, {PAIR_COLUMN_MIN});}}'
    # a side navigation (the walkthrough's contents, keyed "sidenav_…"): the contents at least
    # 10rem, the page beside them at least 24rem, else the contents go above the page ...
    f'{ROW.format("sidenav_")}:first-child{{min-width: min(100%, 10rem);}}'
    f'{ROW.format("sidenav_")}:last-child{{min-width: min(100%, 24rem);}}'
    # ... where a list of choices keyed "contents_…" flows into as many columns as fit
    '[class*="st-key-contents_"] [role="radiogroup"]{display: block; column-width: 13rem;'
    " column-gap: 1.5rem;}"
    '[class*="st-key-contents_"] [role="radiogroup"] > div{break-inside: avoid;}'
    '[class*="st-key-contents_"] [data-testid="stElementContainer"],'
    '[class*="st-key-contents_"] [data-testid="stRadio"]{width: 100%;}'
    # a formula is never clipped nor given a scroll bar (KaTeX's own box can come out a few
    # px narrower than what it draws); tests/browser/test_narrow.py checks that each fits
    '.katex-display{overflow: visible !important; padding: 0 4px;}'
    # words break between letters only when a single word is wider than its whole column
    '[data-testid="stMarkdownContainer"] {overflow-wrap: break-word; word-break: normal;}'
)
STYLE = f"<style>{STALE_IN_ONE_STEP}{NARROW_SCREENS}</style>"


def apply() -> None:
    """Send the style block; a <style>-only st.html takes no space on the page."""
    st.html(STYLE)
