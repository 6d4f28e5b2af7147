"""AppTest: the walkthrough speaks of the model in the sidebar.

- the last step's "Where to go next" links only pages that apply: Logit lens and Generate for a
  model that predicts the next token, Attention / Head statistics / Embeddings for an encoder;
- the first line about a second text: a sentence pair only for a model with token types, a
  padded batch for a decoder whose tokenizer takes a second text, nothing for a character model
  (it refuses a second text);
- numbers: every preview column with 3 fixed decimals, next-token probabilities as the same
  percentages in the table and the bars, ranks from 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "walkthrough"
OTHER = "Other: local directory or hub id"
PAIR_WORDS = ("sentence pair", "second sentence")


def _page(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for name, value in params.items():
        at.query_params[name] = str(value)
    switch(at, PAGE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _last_step(at: AppTest) -> AppTest:
    at.selectbox(key="wk_step").set_value(len(at.selectbox(key="wk_step").options)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _links(at: AppTest) -> list[str]:
    return [link.proto.page for link in at.main.get("page_link")]


def _captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.main.caption)


def _formats(at: AppTest, index: int = 0) -> dict:
    return json.loads(at.main.dataframe[index].proto.columns or "{}")


def test_an_encoder_is_sent_to_pages_for_encoders():
    """MiniLM was once sent to the Logit lens, which opens on "needs a decoder"."""
    at = _last_step(_page())
    assert _links(at) == ["attention", "heads", "embeddings"]
    where = next(m.value for m in at.main.markdown if "Where to go next" in m.value)
    assert "next token" not in where


def test_encoder_decoder_is_sent_to_pages_for_encoders():
    at = _last_step(_page(model="tiny-reverse"))
    assert "logit-lens" not in _links(at) and "generate" not in _links(at)


def test_decoder_is_sent_to_the_logit_lens_and_generate():
    at = _last_step(_page(model="tiny-chars"))
    assert _links(at) == ["attention", "logit-lens", "generate"]


def test_pair_wording_only_for_a_model_with_token_types(tiny_dirs):
    """"Type a second sentence … to compare a sentence pair" was shown for a
    character decoder, which refuses a second text."""
    assert any(w in _captions(_page()) for w in PAIR_WORDS)  # MiniLM: token types
    chars = _captions(_page(model="tiny-chars"))
    assert not any(w in chars for w in PAIR_WORDS) and "second text" not in chars
    at = _page()
    at.selectbox(key="sb_model_choice").set_value(OTHER).run()
    at.text_input(key="sb_model_other").input(str(tiny_dirs["gpt2"])).run()
    words = _captions(at)
    assert not any(w in words for w in PAIR_WORDS) and "padded batch of two texts" in words
    at.text_input(key="sb_pair").input("A second, longer text here.").run()
    assert not at.exception
    assert "wk_batch" not in [t.key for t in at.toggle]  # no pair: the two texts are a batch
    assert "padded batch of two" in _captions(at)
    assert any("shape `[2, " in m.value for m in at.main.markdown)


def test_preview_columns_have_fixed_decimals():
    """Step 13's table once had "2.37" and "-0.92" beside "4.319"."""
    at = _page(step=13)
    frame = at.main.dataframe[0].value
    assert frame.dtypes.map(lambda d: d.kind).eq("f").all()
    assert _formats(at) == {str(c): {"type_config": {"type": "number", "format": "%.3f"}}
                            for c in frame.columns}


def test_decoder_probabilities_are_percentages_in_table_and_bars():
    """The table once gave 0.387 / 0.611 while the bars gave 61.1% / 38.7%, tiny
    bars read "0.0%" where Generate writes "< 0.01%", and ranks started at 0."""
    at = _last_step(_page(model="tiny-chars"))
    table = at.main.dataframe[0].value
    cells = [str(v) for v in table.to_numpy().ravel()]
    assert cells and all(c.endswith("%") for c in cells), cells
    spec = json.loads(next(el.proto.spec for el in at.get("plotly_chart")
                           if el.key == "wk_fig"))
    bars = spec["data"][0]
    assert bars["y"][0].startswith("1. ") and bars["y"][-1].startswith(f"{len(bars['y'])}. ")
    assert "0.0%" not in bars["text"] and all(t.endswith("%") for t in bars["text"])
    # the two most likely tokens read the same in the table as on their bars
    columns = [str(c).split(" (id")[0] for c in table.columns]
    both = [(label.split(". ", 1)[1], text) for label, text in zip(bars["y"], bars["text"])
            if label.split(". ", 1)[1] in columns]
    assert both  # "␣" and "↵" lead on "The cat sat on the mat.", and are vocabulary ids 0, 1
    for token, text in both:
        assert table.iloc[0, columns.index(token)] == text, (token, text)
    assert spec["layout"]["xaxis"]["tickformat"] == ".0%"
    assert _formats(at) and all(v.get("alignment") == "right" for v in _formats(at).values())


def test_a_mask_of_whole_numbers_reads_0_not_0_000():
    """The causal mask is 0 where a token may look and −∞ where not: "0", not "0.000"."""
    at = _page(model="tiny-chars")
    step = next(i for i, o in enumerate(at.selectbox(key="wk_step").options, 1) if "Add the mask" in o)
    at.selectbox(key="wk_step").set_value(step).run()
    assert not at.exception
    mask = at.main.dataframe[0].value.to_numpy()
    assert set(mask.ravel()) == {"0", "−∞"}
    scores = at.main.dataframe[1].value.to_numpy()  # the masked scores keep 3 decimals
    assert all(len(c.split(".")[1]) == 3 for c in scores.ravel() if c != "−∞")
