"""Which tokens are special (model/tokenizer.py): a special id is special wherever it came from,
typed inside the text or added by the tokenizer, as Hugging Face marks it; [UNK] is text.
Head statistics and "hide special tokens" follow the same definition, and the heads page names
the special tokens a text holds (none for a character model)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.head_stats import head_statistics, special_tokens_in
from analysis.rollout import drop_special
from model import load_model

TYPED = "the [SEP] cat [MASK] sat 🙂 [CLS] on it"


@pytest.fixture(scope="module")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    from model.registry import BUNDLED

    return AutoTokenizer.from_pretrained(str(BUNDLED["minilm"]()))


def test_typed_specials_reach_the_model_as_hugging_face_sends_them(minilm, minilm_tokenizer):
    trace = minilm.run(TYPED)
    hf = minilm_tokenizer(TYPED)
    # the ids are Hugging Face's own: a typed [SEP] is the real [SEP] id, not split as text
    assert trace.token_ids.tolist() == hf["input_ids"]
    assert trace.tokens[2] == "[SEP]" and trace.token_ids[2] == minilm_tokenizer.sep_token_id


def test_a_typed_special_is_special_like_an_added_one(minilm, minilm_tokenizer):
    trace = minilm.run(TYPED)
    ids = trace.token_ids.tolist()
    mask = trace.special_mask[0].tolist()
    # Hugging Face's own definition for ids that already hold special tokens...
    hf = minilm_tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
    unk = [i == minilm_tokenizer.unk_token_id for i in ids]
    assert any(unk)  # the emoji is [UNK]: the one place the two definitions part
    # ...except [UNK], which stands for a piece of the text
    assert mask == [int(h and not u) for h, u in zip(hf, unk)]
    specials = [t for t, m in zip(trace.tokens, mask) if m]
    assert specials == ["[CLS]", "[SEP]", "[MASK]", "[CLS]", "[SEP]"]
    # which of them were typed, not added by the tokenizer
    assert [trace.tokens[i] for i in trace.typed_special[0]] == ["[SEP]", "[MASK]", "[CLS]"]


def test_a_text_without_typed_specials_has_none_typed(minilm):
    trace = minilm.run("The cat sat on the mat.")
    assert trace.typed_special == [[]]
    assert trace.special_mask[0].tolist() == [1] + [0] * (trace.n_tokens - 2) + [1]


def test_run_ids_marks_the_same_tokens(minilm):
    trace = minilm.run(TYPED)
    again = minilm.run_ids(trace.token_ids)
    assert torch.equal(again.special_mask, trace.special_mask)


def test_head_statistics_count_a_typed_sep_as_special(minilm):
    trace = minilm.run(TYPED)
    stats = head_statistics(trace.attentions, trace.tokens, trace.special_mask[0])
    special = trace.special_mask[0].bool().numpy()
    a = trace.attentions.numpy()  # [layer, head, q, k]
    want = a[..., special].sum(-1).mean(-1)  # [layer, head]
    np.testing.assert_allclose(stats["special"], want, rtol=1e-5)
    # and it is not the old number, which left the typed ones out
    added_only = np.zeros_like(special)
    added_only[[0, -1]] = True
    old = a[..., added_only].sum(-1).mean(-1)
    assert np.abs(stats["special"] - old).max() > 0.05


def test_hide_special_tokens_hides_the_typed_ones_too(minilm):
    trace = minilm.run(TYPED)
    keep = ~trace.special_mask[0].bool().numpy()
    _, shown = drop_special(trace.attentions[0, 0].numpy(), keep)
    assert [trace.tokens[i] for i in shown] == ["the", "cat", "sat", "[UNK]", "on", "it"]


@pytest.mark.parametrize("family, typed", [("llama", "<s>"), ("gpt2", "<|endoftext|>"),
                                           ("roberta", "</s>")])
def test_typed_specials_of_other_tokenizers(tiny_models_loaded, tiny_dirs, family, typed):
    from transformers import AutoTokenizer

    text = f"I love {typed} cats!"
    trace = tiny_models_loaded[family].run(text)
    hf = AutoTokenizer.from_pretrained(str(tiny_dirs[family]))
    assert trace.token_ids.tolist() == hf(text)["input_ids"]
    where = [i for i, t in enumerate(trace.tokens) if t == typed]
    position = [i for i in where if 0 < i < len(trace.tokens) - 1]  # not the added ones
    assert len(position) == 1 and trace.typed_special == [position]
    assert trace.special_mask[0, position[0]] == 1
    ids = trace.token_ids.tolist()
    assert trace.special_mask[0].tolist() == hf.get_special_tokens_mask(
        ids, already_has_special_tokens=True)  # these tokenizers have no unknown token in use


def test_the_reversal_model_marks_its_typed_control_characters():
    lm = load_model("tiny-reverse")
    trace = lm.run("ab_c^d")  # "_" is its padding character, "^" its start, "$" its end
    assert trace.tokens == ["a", "b", "_", "c", "^", "d", "$"]
    assert trace.special_mask[0].tolist() == [0, 0, 1, 0, 1, 0, 1]
    assert trace.typed_special == [[2, 4]]


def test_a_character_model_has_no_special_tokens():
    trace = load_model("tiny-chars").run("a [SEP] b")
    assert trace.special_mask[0].tolist() == [0] * trace.n_tokens
    assert trace.typed_special == [[]]


def test_the_walkthrough_counts_only_the_special_tokens_the_tokenizer_added(minilm):
    from analysis.walkthrough import walkthrough

    trace = minilm.run(TYPED)
    typed = len(trace.typed_special[0])
    assert typed == 3  # [SEP], [MASK] and [CLS] typed in the text
    added = int(trace.special_mask.sum()) - typed
    first = walkthrough(trace, 0)[0]
    assert first.key == "tokens"
    assert f"adding {added} special tokens" in first.summary
    assert f"the {typed} special tokens typed in the text" in first.summary


def test_special_tokens_in_a_text(minilm, tiny_chars):
    assert special_tokens_in(minilm.run("The cat sat.")) == ["[CLS]", "[SEP]"]
    assert special_tokens_in(tiny_chars.run("The cat sat.")) == []  # every character is text
    pair = minilm.run("The cat sat.", "A dog ran.")
    assert special_tokens_in(pair) == ["[CLS]", "[SEP]"]  # each named once
