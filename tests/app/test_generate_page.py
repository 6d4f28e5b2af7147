"""The generate page (/generate): a prompt cut to the model's context gets a heading that says
where the text starts (and "send to the sidebar" keeps the whole text), and a note says why the
generated text stopped."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text  # noqa: E402

GENERATE = "generate"
SHORT = "The cat sat on the mat."
DECLONG = ("The old lighthouse keeper climbed the stairs every evening to light the lamp. The sea "
           "was loud and the wind was cold, and far away a ship was looking for the harbour in "
           "the dark. He thought about his daughter, who lived in the city now.")


def test_generate_on_a_cut_prompt_says_where_the_text_starts():
    at = open_page(GENERATE, "tiny-chars", DECLONG, gn=5)
    heads = [h.value for h in at.subheader]
    assert "The last 64 tokens of the prompt, then the new text" in heads
    assert "The whole text" not in heads
    (code,) = [c.value for c in at.code]
    assert code.startswith("…")
    assert "the prompt is at most" not in page_text(at)  # the banner says how long it is
    at.button(key="gen_to_sidebar").click().run()  # the sidebar text, all of it, and the new
    assert not at.exception
    assert at.session_state["sb_text"].startswith(DECLONG) and len(
        at.session_state["sb_text"]) == len(DECLONG) + 5
    at = open_page(GENERATE, "tiny-chars", SHORT, gn=5)
    assert "The whole text" in [h.value for h in at.subheader]
    assert not at.code[0].value.startswith("…")


def test_generate_says_why_the_text_stops():
    at = open_page(GENERATE, "tiny-chars", SHORT, gn=6)
    captions = [c.value for c in at.caption]
    (note,) = [c for c in captions if c.startswith("Stopped after")]
    assert note.startswith("Stopped after 6 new tokens, the number asked for, so the text may "
                           "end in the middle of a word.")
    assert "Raise “New tokens” above" in note
