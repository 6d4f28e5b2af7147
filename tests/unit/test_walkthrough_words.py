"""The walkthrough's words for the learner: counts with real plurals, and where each tensor
comes from in plain words (the hook names stay for the "for the curious" expander)."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from analysis.walkthrough import walkthrough  # noqa: E402
from analysis.walkthrough.steps import dim_words, plural, where_from  # noqa: E402
from model import load_model  # noqa: E402

TYPED = "[CLS] is typed here, and [SEP] and [MASK] too."


def test_plural_and_dimension_words():
    assert plural(1, "text") == "1 text" and plural(2, "text") == "2 texts"
    assert plural(0, "special token") == "0 special tokens"
    assert dim_words("q_pos") == "queries" and dim_words("k_pos", one=True) == "key"
    assert dim_words("heads (broadcast)", one=True) == "head"


def test_every_tensor_says_where_it_comes_from_in_plain_words():
    trace = load_model("tiny-chars").run("The cat sat on the mat.", keep=None)
    steps = walkthrough(trace, 1)
    assert [s.title for s in steps if s.key == "stack"] == ["Repeat for both layers"]
    for step in steps:
        for shown in step.shown:
            words = where_from(shown)
            for internal in ("hook_", "blocks.", "trace.", "`", "a tensor"):
                assert internal not in words, (step.key, words)
            assert bool(shown.how) == bool(shown.plain_how), (step.key, shown.label)
    scores = next(s for s in steps if s.key == "scores").shown[0]
    assert where_from(scores) == ("Read inside the model as it ran on your text: the attention "
                                  "scores (layer 1).")


def test_special_tokens_counted_with_plurals(minilm):
    trace = minilm.run(TYPED)
    typed = len(trace.typed_special[0])
    added = int(trace.special_mask.sum()) - typed
    summary = walkthrough(trace, 0)[0].summary
    assert "(s)" not in summary
    assert f"adding {plural(added, 'special token')}" in summary
    assert f"the {plural(typed, 'special token')} typed in the text" in summary
    summary = walkthrough(load_model("tiny-chars").run("abc", keep=None), 0)[0].summary
    assert "adding no special tokens" in summary and "3 positions" in summary
