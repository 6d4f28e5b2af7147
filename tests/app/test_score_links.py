"""Ways into "Why this score": the positions page names the heads whose pattern on the
sidebar's text is most a matter of place (the same heads and shares analysis/positional_heads.py
gives), each a button that opens that head on the attention page with its sharpest cell taken
apart; the walkthrough's Q·K step opens one of its own scores the same way. Both keep the
model and the text."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import pytest  # noqa: E402

from analysis.positional_heads import most_positional, positional_map, telling_cell  # noqa: E402
from analysis.score_parts import decompose_cell, needed  # noqa: E402
from model import load_model  # noqa: E402
from page_links import open_page  # noqa: E402

TEXT = "The cat sat on the mat because it was warm."


def _why_opened(at, model: str, layer: int, head: int, query: int, key: int) -> None:
    """The attention page drew `head` of `layer` with the (query, key) score taken apart."""
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["Attention"]
    state = at.session_state
    assert (state["sb_model_choice"], state["sb_text"]) == (model, TEXT)
    assert (state["attn_layer"], state["attn_head"]) == (layer, head)
    assert state["attn_view"] == "Why this score"
    assert (at.selectbox(key="attn_cell_query").value, at.selectbox(key="attn_cell_key").value) \
        == (query, key)
    lm = load_model(model)
    cell = decompose_cell(lm, lm.run(TEXT, keep=needed(lm.cfg)), layer, head, query, key)
    assert any(f"{cell.score:.3f}" in m.value for m in at.markdown)
    assert at.query_params["cq"] in (str(query), [str(query)])


@pytest.mark.parametrize("model", ["minilm", "tiny-chars"])
def test_the_positions_page_opens_the_heads_its_positions_drive(model):
    at = open_page("positions", model, TEXT)
    lm = load_model(model)
    trace = lm.run(TEXT, keep=needed(lm.cfg))
    top = most_positional(positional_map(lm, trace), 3)
    buttons = [b for b in at.button if b.key.startswith("pos_why_")]
    assert [b.key for b in buttons] == [f"pos_why_{layer}_{head}" for layer, head, _ in top]
    layer, head, share = top[0]
    assert f"({share:.2f})" in buttons[0].label
    assert any("Which heads do these positions drive?" in h.value for h in at.header)
    buttons[0].click().run()
    _why_opened(at, model, layer, head, *telling_cell(trace, layer, head))


def test_a_t5_positions_page_names_the_encoders_heads():
    import tiny_seq2seq

    folder = str(tiny_seq2seq.folder("t5"))
    at = open_page("positions", folder, TEXT)
    assert any(b.key.startswith("pos_why_") for b in at.button)
    assert any("encoder" in c.value for c in at.caption)


def test_the_walkthroughs_scores_step_opens_its_own_cell():
    at = open_page("walkthrough", "minilm", TEXT, step=1, wlayer=2, whead=5)
    steps = at.selectbox(key="wk_step").options
    number = next(i for i, s in enumerate(steps, 1) if "Scores Q·K" in s)
    at.selectbox(key="wk_step").set_value(number).run()
    button = at.button(key="wk_why_score")
    lm = load_model("minilm")
    query, key = telling_cell(lm.run(TEXT), 2, 5)
    assert "look at" in button.label
    button.click().run()
    _why_opened(at, "minilm", 2, 5, query, key)


def test_a_buttons_words_name_the_tokens_as_words():
    from ui.score_links import looks_at

    tokens = ["<s>", "Ġthe", "Ġcat", "*"]
    assert looks_at(tokens, 2, 1) == "why does “cat” look at “the”?"
    assert looks_at(tokens, 3, 3) == "why does “\\*” look at itself?"
