"""Every page that shows tokens says, in one plain line, which characters of the text the
bundled character model has no token for (they all show as "?"), and tiny-induction offers a
sentence it reads fully, like tiny-chars."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text  # noqa: E402

TEXT = "The cat sat."


@pytest.mark.parametrize("page", ["attention", "logit-lens", "effect", "generate", "compare"])
def test_pages_say_which_characters_the_model_cannot_read(page):
    at = open_page(page, "tiny-induction", TEXT)
    said = page_text(at, kinds=("caption",))
    assert "does not know" in said, said
    assert "space" in said and "“T”" in said and "“.”" in said


def test_no_alphabet_note_when_the_model_reads_every_character():
    at = open_page("attention", "tiny-induction", "abcabc")
    assert "does not know" not in page_text(at, kinds=("caption",))


def test_tiny_induction_offers_a_sentence_it_knows():
    from ui.examples import known_sentence

    at = open_page("attention", "tiny-induction", TEXT)
    at.button(key="sb_known_text").click().run()
    assert not at.exception
    assert at.text_area(key="sb_text").value == known_sentence("tiny-induction")
    assert "does not know" not in page_text(at, kinds=("caption",))


def test_compare_names_the_characters_of_text_b_the_model_cannot_read():
    at = open_page("compare", "tiny-induction", "abcabc")
    at.text_area(key="cmp_text_b").input("abcab.").run()
    assert not at.exception
    said = page_text(at, kinds=("caption",))
    assert "does not know" in said and "“.”" in said, said


@pytest.mark.parametrize("page", ["logit-lens", "compare", "attention", "effect"])
def test_characters_past_the_context_are_not_named(page):
    """tiny-induction reads 48 characters: a capital after them never reaches the model, so
    the line does not name it; one inside them is named."""
    def said(text: str) -> str:
        at = open_page(page, "tiny-induction", text)
        if page == "compare":  # B: A with its first letter changed, so there is a map
            at.text_area(key="cmp_text_b").input("b" + text[1:]).run()
        assert not at.exception
        return page_text(at, kinds=("caption",))

    after = "abc" * 20 + "XYZ"  # 63 characters, the capitals past the 48th
    assert "does not know" not in said(after), said(after)
    inside = "abc" * 5 + "X" + "abc" * 15  # the capital is the 16th character
    assert "does not know" in said(inside) and "“X”" in said(inside)


def test_ablation_names_the_unknown_characters_once_heads_are_removed():
    """Without heads, the page labels its bars and its position slider with the text's
    tokens: the "?" among them are explained there too."""
    at = open_page("ablation", "tiny-induction", TEXT, abheads="1.1")
    said = page_text(at, kinds=("caption",))
    assert "Removed: L1 H1" in said and "does not know" in said and "“T”" in said, said

