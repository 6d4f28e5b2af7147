"""Session-8 fixes on the logit lens, heads, generate and effect pages (review 7, items 15, 16,
21, 24, 30, 32): tables that fit an 800 px screen, wording built from the model's own special
tokens, a note on why generation stopped, plain words for Spearman ρ, no one-option radios."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_page  # noqa: E402

from chart_data import chart_specs as _charts  # noqa: E402

TEXT = "The cat sat on the mat."
# The main column of an 800 px window with the sidebar open (measured on a screenshot), and
# the row-selection checkbox column of a selectable st.dataframe.
NARROW_MAIN_PX, CHECKBOX_PX = 467, 32


def _app(page: str, model: str = "minilm", text: str | None = None, **params) -> AppTest:
    return open_page(page, model, text, **params)


def _texts(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind)]
    return " ".join(str(p) for p in parts).replace("\\", "")  # Markdown escapes


@pytest.fixture(scope="module")
def tiny_chars():
    from model import load_model

    return load_model("tiny-chars")


def test_lens_detail_is_a_narrow_table_of_token_and_probability(tiny_chars):
    from analysis.logit_lens import logit_lens

    at = _app("app_pages/logit_lens.py", "tiny-chars", TEXT)
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
    assert "“c”" in _texts(at)


def test_heads_intro_names_the_models_own_special_tokens():
    at = _app("app_pages/heads.py", "minilm", TEXT)
    intro = at.caption[0].value.replace("\\", "")
    assert "park their attention on [CLS] or [SEP]" in intro
    assert "To special tokens" in at.selectbox(key="hs_stat").options

    at = _app("app_pages/heads.py", "tiny-chars", TEXT)
    intro = at.caption[0].value
    assert "[SEP]" not in intro and "park their attention on the first token" in intro
    assert "To special tokens" not in at.selectbox(key="hs_stat").options
    (table,) = [d.value for d in at.dataframe if "head" in d.value.columns]
    assert "To special tokens" not in table.columns  # it would be all zeros
    assert "Special" not in _texts(at)


def test_heads_table_shows_the_intros_columns_on_an_800_px_screen():
    at = _app("app_pages/heads.py", "minilm", TEXT)
    (table,) = [d for d in at.dataframe if "head" in d.value.columns]
    frame, config = table.value, json.loads(table.proto.columns)
    wanted = ["To the previous token", "To itself", "To the next token",
              "Mean distance (tokens)"]
    assert list(frame.columns[:6]) == ["head", "Entropy (bits)", *wanted]
    # no row selection (its checkbox column would take CHECKBOX_PX): every column fits
    assert not table.proto.selection_mode
    used = sum(config[c]["width"] for c in frame.columns)
    assert used <= NARROW_MAIN_PX
    for column in wanted:  # each header fits its column (about 7 px a letter, 16 px padding)
        assert 7 * len(config[column]["label"]) + 16 <= config[column]["width"]


def test_generate_says_why_the_text_stops():
    at = _app("app_pages/generate.py", "tiny-chars", TEXT, gn=6)
    captions = [c.value for c in at.caption]
    (note,) = [c for c in captions if c.startswith("Stopped after")]
    assert note.startswith("Stopped after 6 new tokens, the number asked for, so the text may "
                           "end in the middle of a word.")
    assert "Raise “New tokens” above" in note


def test_effect_glosses_spearman_and_says_a_single_choice_in_words():
    at = _app("app_pages/effect.py", "tiny-chars", TEXT)
    sub = _charts(at)["eff_strip"]["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")
    assert "rank agreement with attention (Spearman ρ: from −1 to 1, 1 means the two orders " \
           "match)" in sub
    assert not [r for r in at.radio if r.key in ("eff_baseline", "eff_occlusion")]
    text = _texts(at)
    assert "Integrated gradients start from **zero vectors**." in text
    assert "Occlusion: for each token in turn, **remove the token**." in text

    at = _app("app_pages/effect.py", "minilm", TEXT)  # more than one choice: radios
    assert at.radio(key="eff_baseline").options == ["zero vectors", "[PAD] tokens", "[MASK] tokens"]
    assert len(at.radio(key="eff_occlusion").options) == 3
