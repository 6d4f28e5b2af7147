"""The generate page's note about the model's context is true at the step shown: at step 1 of a
prompt that fits, it does not say the text already grew past what the model reads."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text  # noqa: E402

PROMPT = "abcdefghij" * 4  # 40 characters; tiny-induction reads 48 at a time


def test_the_context_note_is_true_at_each_step():
    at = open_page("generate", "tiny-induction", PROMPT, gn=20)
    said = page_text(at, kinds=("info",))
    assert "grew past" not in said and "this step read only" not in said, said
    assert "at step 10" in said, said  # 40 + 9 tokens: the 10th step is the first cut to 48
    at = open_page("generate", "tiny-induction", PROMPT, gn=20, gstep=10)
    said = page_text(at, kinds=("info",))
    assert "this step read only the last 48" in said, said
    at = open_page("generate", "tiny-induction", PROMPT, gn=5)
    assert "48 tokens this model reads" not in page_text(at, kinds=("info",))
