"""The line under the attention page's figures for a T5 or BART folder: the check against
Hugging Face does not cover an encoder-decoder yet, and it says so instead of calling the model
one of this project's own (which tiny-reverse is)."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

import tiny_seq2seq  # noqa: E402


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_the_reference_check_does_not_call_t5_one_of_the_projects_own(family):
    """The attention page's line under the figures: T5 and BART are Hugging Face models, not
    this project's; tiny-reverse is."""
    from analysis.reference_check import unsupported_reason
    from model import load_model

    lm, _ = tiny_seq2seq.loaded(family)
    reason = unsupported_reason(lm, tiny_seq2seq.folder(family))
    assert "own models" not in reason and "separate decoder" in reason
    assert "own models" in unsupported_reason(load_model("tiny-reverse"), None)
