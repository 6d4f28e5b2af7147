"""Review 8b fixes on the logit lens, effect, generate and heads pages (items 3, 5, 6, 8, 10,
11, 14): captions that agree with the sidebar's note when the model's context cut the text, a
one-click way to a text the per-head view can take, plain words on the lens's first screen,
a heads table whose every column fits an 800 px screen, an honest heading for a cut prompt,
and a projector-mode sidebar wide enough for its larger text."""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_page  # noqa: E402

from analysis.effect import MAX_OCCLUSION_TOKENS  # noqa: E402

SHORT = "The cat sat on the mat."
DECLONG = ("The old lighthouse keeper climbed the stairs every evening to light the lamp. The sea "
           "was loud and the wind was cold, and far away a ship was looking for the harbour in "
           "the dark. He thought about his daughter, who lived in the city now.")
NARROW_MAIN_PX = 467  # the main column of an 800 px window with the sidebar open


def _app(page: str, model: str = "tiny-chars", text: str | None = None, **params) -> AppTest:
    return open_page(page, model, text, **params)


def _texts(at: AppTest, kinds=("markdown", "caption", "info", "warning")) -> str:
    parts = [e.value for kind in kinds for e in at.get(kind)]
    return " ".join(str(p) for p in parts).replace("\\", "")


def test_effect_limits_caption_agrees_with_a_context_cut():  # 8b #3
    at = _app("app_pages/effect.py", text=DECLONG)
    assert "were dropped" in _texts(at, ("warning",))
    (limits,) = [c.value for c in at.caption if c.value.startswith("Limits")]
    assert limits.endswith("(the model itself reads at most 64 tokens: see above).")
    at = _app("app_pages/effect.py", text=SHORT)  # nothing cut: the plain sentence
    (limits,) = [c.value for c in at.caption if c.value.startswith("Limits")]
    assert limits.endswith("these limits never shorten your text.")


def test_effect_per_head_view_offers_a_shorter_text():  # 8b #6
    long = " ".join(["word"] * (MAX_OCCLUSION_TOKENS + 20))
    at = _app("app_pages/effect.py", "minilm", long)
    at.button(key="eff_run").click().run()
    assert not at.exception
    assert "Shorten the text to see it" in _texts(at)
    button = at.button(key="eff_short_occ")
    assert button.label.startswith("Use the first ") and button.label.endswith(" tokens of the text")
    n = int(button.label.split()[3])
    assert 200 < n <= MAX_OCCLUSION_TOKENS
    button.click().run()
    assert not at.exception
    shorter = at.session_state["sb_text"]
    assert long.startswith(shorter) and len(shorter.split()) == n - 2  # [CLS] and [SEP]


def test_lens_last_token_of_a_cut_text_is_not_called_the_last_token():  # 8b #5
    at = _app("app_pages/logit_lens.py", text=DECLONG)
    at.select_slider(key="lens_pos").set_value(63).run()
    text = _texts(at, ("caption",))
    assert "the last token the model read (the rest of the text was cut)" in text
    assert "This is the last token, so" not in text
    at = _app("app_pages/logit_lens.py", text=SHORT)
    assert "This is the last token, so there is no true next token" in _texts(at, ("caption",))


def test_lens_first_screen_has_no_jargon():  # 8b #8
    at = _app("app_pages/logit_lens.py", text=SHORT)
    intro = at.caption[0]
    assert "turned into a probability for every token" in intro.value
    for word in ("unembedding", "softmax", "final norm", "residual stream"):
        assert word not in intro.value
    assert "unembedding" in intro.proto.help and "softmax" in intro.proto.help  # for the curious


def test_generate_on_a_cut_prompt_says_where_the_text_starts():  # 8b #11
    at = _app("app_pages/generate.py", text=DECLONG, gn=5)
    heads = [h.value for h in at.subheader]
    assert "The last 64 tokens of the prompt, then the new text" in heads
    assert "The whole text" not in heads
    (code,) = [c.value for c in at.code]
    assert code.startswith("…")
    assert "the prompt is at most" not in _texts(at)  # the banner says how long it is
    at.button(key="gen_to_sidebar").click().run()  # the sidebar text, all of it, and the new
    assert not at.exception
    assert at.session_state["sb_text"].startswith(DECLONG) and len(
        at.session_state["sb_text"]) == len(DECLONG) + 5
    at = _app("app_pages/generate.py", text=SHORT, gn=5)
    assert "The whole text" in [h.value for h in at.subheader]
    assert not at.code[0].value.startswith("…")


def test_heads_table_shows_every_column_the_caption_names_at_800():  # 8b #10
    at = _app("app_pages/heads.py", "minilm", SHORT)
    (table,) = [d for d in at.dataframe if "head" in d.value.columns]
    frame, config = table.value, json.loads(table.proto.columns)
    assert frame.columns[0] == "head" and frame["head"].str.fullmatch(r"L\d+ H\d+").all()
    assert table.proto.selection_mode == []  # no checkbox column eating the width
    assert sum(config[c]["width"] for c in frame.columns) <= NARROW_MAIN_PX
    labels = [config[c]["label"] for c in frame.columns[1:]]
    (caption,) = [c.value for c in at.caption if "the share (in %)" in c.value]
    for label in labels:  # every header fits its column; the caption names every one
        assert 7 * len(label) + 16 <= config[frame.columns[1 + labels.index(label)]]["width"]
        assert label in caption
    assert {"Prev", "Self", "Next", "Spec", "First", "Punct", "Dist", "Entropy"} <= set(labels)


def test_projector_mode_widens_the_sidebar_with_its_text():  # 8b #14
    at = _app("app_pages/logit_lens.py", text=SHORT, projector=1)
    css = " ".join(str(h.proto.body) for h in at.get("html"))
    assert "font-size: 22px" in css
    assert "section[data-testid='stSidebar'][data-collapsed='false'] { width: 412px" in css
