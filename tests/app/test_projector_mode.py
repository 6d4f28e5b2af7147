"""Projector mode (`projector=1` in a link): the larger text comes with a sidebar wide enough
for it."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page  # noqa: E402


def test_projector_mode_widens_the_sidebar_with_its_text():
    at = open_page("logit-lens", "tiny-chars", "The cat sat on the mat.",
                   projector=1)
    css = " ".join(str(h.proto.body) for h in at.get("html"))
    assert "font-size: 22px" in css
    assert "section[data-testid='stSidebar'][data-collapsed='false'] { width: 412px" in css
