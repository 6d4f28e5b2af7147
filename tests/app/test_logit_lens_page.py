"""The logit-lens page (/logit_lens): the detail for one position is a narrow table of token
and probability per layer, read from the model's own lens; the last token of a text the model's
context cut is not called the last token; and when the model's own guesses are mostly wrong on
a text, the page says so and offers a text the model knows."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from page_links import open_page, page_text, start_app, switch  # noqa: E402

LENS = "logit-lens"
TEXT = "The cat sat on the mat."
DECLONG = ("The old lighthouse keeper climbed the stairs every evening to light the lamp. The sea "
           "was loud and the wind was cold, and far away a ship was looking for the harbour in "
           "the dark. He thought about his daughter, who lived in the city now.")


def test_lens_detail_is_a_narrow_table_of_token_and_probability(tiny_chars):
    from analysis.logit_lens import logit_lens

    at = open_page(LENS, "tiny-chars", TEXT)
    at.select_slider(key="lens_pos").set_value(3).run()  # "␣", then "c" comes next
    assert not at.exception
    assert not at.dataframe  # not a grid that scrolls sideways on a narrow screen
    (table,) = at.table
    frame = table.value
    assert list(frame.columns) == ["layer", "#1", "#2", "#3", "#4", "#5", "true next"]
    assert list(frame["layer"]) == ["embeddings", "after layer 0", "after layer 1"]
    trace = tiny_chars.run(TEXT)
    lens = logit_lens(tiny_chars.model, trace.hidden_states, trace.token_ids, k=5)
    for row in range(3):
        token = tiny_chars.tokenizer.tokens([int(lens.top_ids[row, 3, 0])])[0]
        p = float(lens.top_probs[row, 3, 0])
        cell = frame["#1"].iloc[row].replace("\\", "")
        shown = 100 * p
        assert cell.endswith("%") and abs(float(cell.split()[-1].rstrip("%")) - shown) <= max(
            0.5, 0.05 * shown)
        assert cell.split()[0] == ("␣" if token == " " else token)
        rank = int(lens.next_rank[row, 3])
        assert frame["true next"].iloc[row].replace("\\", "").startswith(f"#{rank} · ")
    assert "“c”" in page_text(at)


def test_lens_last_token_of_a_cut_text_is_not_called_the_last_token():
    at = open_page(LENS, "tiny-chars", DECLONG)
    at.select_slider(key="lens_pos").set_value(63).run()
    text = page_text(at, ("caption",))
    assert "the last token the model read (the rest of the text was cut)" in text
    assert "This is the last token, so" not in text
    at = open_page(LENS, "tiny-chars", TEXT)  # opens on the first positions: go to the last
    at.select_slider(key="lens_pos").set_value(len(TEXT) - 1).run()
    assert "This is the last token, so there is no true next token" in page_text(at, ("caption",))


def test_the_logit_lens_says_when_the_models_own_guesses_are_mostly_wrong(tiny_chars):
    from analysis.logit_lens import logit_lens
    from ui.examples import known_sentence

    at = start_app("The cat sat on the mat.")
    at.selectbox(key="sb_model_choice").set_value("tiny-chars").run()
    switch(at, LENS).run()
    assert not at.exception
    lm = tiny_chars
    trace = lm.run("The cat sat on the mat.",
                   keep=lambda name: name.endswith(("hook_resid_pre", "hook_resid_post")))
    lens = logit_lens(lm.model, trace.hidden_states, trace.token_ids, k=5)
    n = trace.n_tokens
    right = int((lens.next_rank[-1, :n - 1] == 1).sum())
    assert 2 * right < n - 1  # the run itself: tiny-chars misses most of this English
    note = [c.value for c in at.caption if c.value.startswith("The model's own guess")]
    assert note and f"at {right} of {n - 1} positions" in note[0]
    assert "This model learned only from" in note[0]
    at.button(key="lens_known_text").click().run()
    assert at.text_area(key="sb_text").value == known_sentence("tiny-chars")
    assert not [c for c in at.caption if c.value.startswith("The model's own guess")]
