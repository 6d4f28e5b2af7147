"""AppTest for the decoder lab's pages: /generate (step-by-step generation) and /attribution
(direct logit attribution), on the bundled decoders, tiny random GPT-2 and Llama checkpoints
loaded as model folders, and MiniLM (an encoder: one line and a one-click switch)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_link  # noqa: E402

from analysis.attribution import attribute_ids  # noqa: E402
from analysis.generation import Sampling, generate_ids  # noqa: E402
from ui.examples import SHORT  # noqa: E402
from chart_data import chart_specs as _charts, plotly_array as _array  # noqa: E402

GENERATE, ATTRIBUTION = "generate", "attribution"
TIMEOUT = 240


def _app(model: str, page: str, **params) -> AppTest:
    """The app opened on `page` with `model` (a bundled name or a folder) from the link."""
    at = open_link(page, TIMEOUT, model=model, **params)
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def _param(at: AppTest, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def _prompt_ids(loaded, text: str) -> list[int]:
    return loaded.run(text).token_ids.reshape(-1).tolist()


def test_generate_shows_the_engines_top_10_and_marks_the_chosen_token(tiny_chars):
    at = _app("tiny-chars", GENERATE)
    assert at.slider(key="gen_n").value == 40 and at.radio(key="gen_mode").value == "greedy"
    assert "200 new tokens" in _texts(at.caption)  # the bounds are on screen
    engine = generate_ids(tiny_chars, _prompt_ids(tiny_chars, SHORT), 40)
    for step in (1, 7):
        at.slider(key="gen_step").set_value(step).run()
        bars = _charts(at)["gen_next_tokens"]["data"][0]
        want = engine.steps[step - 1]
        np.testing.assert_allclose(_array(bars["x"]), want.top_probs, atol=1e-6)
        assert len(bars["y"]) == 10 and "◀ chosen" in bars["y"][0]  # greedy: the top one
        assert all(t.endswith("%") and "e-" not in t for t in bars["text"])  # 0.07%, no 7e-04
        assert sum("◀ chosen" in label for label in bars["y"]) == 1
        assert len(_charts(at)["gen_next_tokens"]["data"]) == 1  # greedy cuts nothing
        row = _charts(at)["gen_attention"]["data"][0]
        layer, head = at.slider(key="gen_layer").value, at.slider(key="gen_head").value
        np.testing.assert_allclose(_array(row["y"]), want.attention[layer, head].numpy(),
                                   atol=1e-6)
        assert len(row["x"]) == want.position + 1  # the causal mask: nothing after it
    assert _texts(at.code) == tiny_chars.tokenizer.decode(engine.ids)
    assert _param(at, "gstep") == "7" and _param(at, "gn") is None  # 40: the default
    at.button(key="gen_to_sidebar").click().run()  # write on from there
    assert not at.exception
    assert at.text_area(key="sb_text").value == SHORT + tiny_chars.tokenizer.decode(
        engine.new_ids)


def test_a_long_prompt_continues_from_its_end_with_one_message(tiny_chars):
    """tiny-chars reads 64 characters. A longer prompt: generation continues from its LAST 64
    (not mid-prompt from the first 64), and one message says so; none says "first 64"."""
    text = "The old keeper climbed the stairs every evening to light the lamp. " * 3 + "the end"
    at = _app("tiny-chars", GENERATE, text=text, gn=5)
    notes = _texts(at.warning) + " " + _texts(at.info)
    assert "last 64" in notes and "first 64 tokens" not in notes
    assert sum("64" in str(w.value) for w in list(at.warning) + list(at.info)) == 1  # once
    whole = _texts(at.code)  # not the whole text: it starts with "…"
    assert whole.startswith("…" + text[-64:]) and text[-64:].endswith("the end")
    engine = generate_ids(tiny_chars, tiny_chars.tokenizer.encode([text[-64:]], None, 64)
                          .input_ids[0].tolist(), 5)
    assert whole == "…" + tiny_chars.tokenizer.decode(engine.ids)


def test_the_induction_head_opens_first_on_tiny_induction():
    from analysis.induction import repeat_scores
    from model import load_model

    at = _app("tiny-induction", GENERATE, text="abcdefgh abcdefgh abc")
    scores = repeat_scores(load_model("tiny-induction").model, n_seqs=32, length=20)
    best = divmod(int(scores["induction"].argmax()), scores["induction"].shape[1])
    assert (at.slider(key="gen_layer").value, at.slider(key="gen_head").value) == best
    assert "induction head" in _texts(at.caption)


def test_the_same_seed_gives_the_same_text_and_the_cut_mass_is_shown(tiny_models_loaded,
                                                                      tiny_dirs):
    lm = tiny_models_loaded["gpt2"]
    at = _app(str(tiny_dirs["gpt2"]), GENERATE)
    at.slider(key="gen_n").set_value(12).run()
    at.radio(key="gen_mode").set_value("sample").run()
    at.slider(key="gen_temp").set_value(1.5).run()
    at.number_input(key="gen_topk").set_value(20).run()
    at.slider(key="gen_topp").set_value(0.8).run()
    at.number_input(key="gen_seed").set_value(3).run()
    assert not at.exception
    first = _texts(at.code)
    sampling = Sampling(greedy=False, temperature=1.5, top_k=20, top_p=0.8, seed=3)
    engine = generate_ids(lm, _prompt_ids(lm, SHORT), 12, sampling)
    assert first == lm.tokenizer.decode(engine.ids)
    at.slider(key="gen_step").set_value(2).run()
    cuts = _charts(at)["gen_next_tokens"]["data"][1]  # the probability cut away, as bars
    want = engine.steps[1]
    np.testing.assert_allclose(_array(cuts["x"]), [want.cut_top_k, want.cut_top_p], atol=1e-9)
    assert want.cut_top_k > 0.01 and want.cut_top_p > 0.01  # both cuts removed something
    assert "grey" in _charts(at)["gen_next_tokens"]["layout"]["title"]["subtitle"]["text"]

    at.number_input(key="gen_seed").set_value(4).run()
    assert _texts(at.code) != first
    at.number_input(key="gen_seed").set_value(3).run()
    assert _texts(at.code) == first
    # a teacher's link reopens the same settings, and so the same text
    link = {k: _param(at, k) for k in ("gn", "gmode", "gt", "gk", "gp", "gseed")}
    assert link == {"gn": "12", "gmode": "sample", "gt": "1.5", "gk": "20", "gp": "0.8",
                    "gseed": "3"}
    again = _app(str(tiny_dirs["gpt2"]), GENERATE, **link)
    assert _texts(again.code) == first and again.number_input(key="gen_seed").value == 3


def test_generated_text_is_shown_as_text_never_as_markup(tiny_dirs):
    hostile = "$x$ <img> **b** [x](javascript:1)"  # fits the tiny GPT-2's 40 tokens whole
    at = _app(str(tiny_dirs["gpt2"]), GENERATE, text=hostile)
    (shown,) = [m for m in at.markdown if "img" in m.value]
    assert not shown.proto.allow_html
    assert "\\*\\*b\\*\\*" in shown.value and "](javascript" not in shown.value
    assert "\\$x\\$" in shown.value and not at.get("html")[1:]


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_attribution_parts_sum_to_the_logit_shown(family, tiny_dirs, tiny_models_loaded):
    lm = tiny_models_loaded[family]
    at = _app(str(tiny_dirs[family]), ATTRIBUTION)
    trace = lm.run(SHORT)
    logits = trace.logits[0, -1]
    assert at.select_slider(key="attr_pos").value == trace.n_tokens - 1  # default: the last
    assert at.selectbox(key="attr_target").value == int(logits.argmax())  # the prediction
    metrics = {m.label: float(m.value) for m in at.metric if m.label != "Gap"}
    gap = next(m for m in at.metric if m.label == "Gap")
    # below the 4 decimals the two metrics show, the gap reads "≈ 0" whatever its last digits
    # (0.0000013 on a long text); the exact size is in its help, in plain decimals
    assert gap.value == "≈ 0" and "e-" not in gap.proto.help and "The gap is" in gap.proto.help
    assert metrics["From the model"] == pytest.approx(float(logits.max()), abs=1e-4)
    assert metrics["Sum of the parts"] == pytest.approx(float(logits.max()), abs=1e-4)
    waterfall = _charts(at)["attr_layers"]["data"][0]
    parts = _array(waterfall["x"])
    assert waterfall["measure"][-1] == "total"
    assert parts[:-1].sum() == pytest.approx(float(logits.max()), abs=1e-4)
    want = attribute_ids(lm, trace.token_ids, -1)
    np.testing.assert_allclose(_array(_charts(at)["attr_grid"]["data"][0]["z"]), want.heads,
                               atol=1e-9)
    assert "frozen" in _texts(at.info).lower()

    at.radio(key="attr_mode").set_value("diff").run()  # a logit difference, top 1 minus top 2
    second = int(logits.argsort(descending=True)[1])
    assert at.selectbox(key="attr_base").value == second
    diff = float(logits.max() - logits[second])
    metrics = {m.label: float(m.value) for m in at.metric if m.label != "Gap"}
    assert metrics["From the model"] == pytest.approx(diff, abs=1e-4)
    assert metrics["Sum of the parts"] == pytest.approx(diff, abs=1e-4)
    assert _param(at, "amode") == "diff" and _param(at, "abase") == str(second)


def test_attribution_opens_the_chosen_head_on_the_attention_page():
    at = _app("tiny-induction", ATTRIBUTION, text="abcdefgh abcdefgh abc")
    at.select_slider(key="attr_pos").set_value(5).run()
    at.selectbox(key="attr_open_head").set_value((1, 2)).run()
    at.button(key="attr_open_btn").click().run()
    assert not at.exception
    assert at.slider(key="attn_layer").value == 1 and at.slider(key="attn_head").value == 2
    assert "layer 1, head 2" in _charts(at)["attn_heatmap"]["layout"]["title"]["text"].lower()


def test_a_click_in_the_attribution_grid_names_the_head(monkeypatch):
    """The grid's on_select callback: the clicked cell's customdata opens that head on the
    attention page (app.py switches to it), with the same model and text."""
    from ui import callbacks, view_state

    state = {"attr_grid": SimpleNamespace(selection=SimpleNamespace(
        points=[{"customdata": [1, 3]}])), "sb_model_choice": "tiny-induction",
        "sb_text": "abcabc", "sb_pair": "", "attn_average": True}
    fake = SimpleNamespace(session_state=state)
    monkeypatch.setattr(callbacks, "st", fake)
    monkeypatch.setattr(view_state, "st", fake)
    callbacks.pick_head("attr_grid", 4)()
    assert (state["attn_layer"], state["attn_head"], state["_view_jump"]) == (1, 3, "attention")
    assert (state["sb_model_choice"], state["sb_text"]) == ("tiny-induction", "abcabc")
    assert "attn_average" not in state  # back to the page's default: that one head


@pytest.mark.parametrize(("page", "key", "chart"), [(GENERATE, "gen_switch", "gen_next_tokens"),
                                                    (ATTRIBUTION, "attr_switch", "attr_grid")])
def test_an_encoder_gets_one_line_and_a_switch_to_a_decoder(page, key, chart):
    at = _app("minilm", page)
    assert "MiniLM is an encoder" in _texts(at.info) and chart not in _charts(at)
    at.button(key=f"{key}_tiny-induction").click().run()
    assert not at.exception
    assert at.selectbox(key="sb_model_choice").value == "tiny-induction"
    assert chart in _charts(at)


def test_the_encoder_decoder_writes_from_its_start_token():
    """tiny-reverse: the sidebar's word is the source; the decoder writes it backwards, and the
    page shows where it looked in the source."""
    at = _app("tiny-reverse", GENERATE, text="softmax")
    assert {"gen_next_tokens", "gen_cross"} <= set(_charts(at))
    assert any(c.value == "xamtfos$" for c in at.code), [c.value for c in at.code]


def test_a_hostile_link_falls_back_to_the_defaults():
    odd = {"gn": "9" * 5000, "gmode": "<script>", "gt": "1e308", "gk": "-1", "gp": "nan",
           "gseed": "²", "gstep": "999999", "glayer": "٣", "ghead": "-2"}
    at = _app("tiny-chars", GENERATE, **odd)
    assert at.slider(key="gen_n").value == 40 and at.radio(key="gen_mode").value == "greedy"
    assert at.slider(key="gen_step").value == 1 and at.number_input(key="gen_seed").value == 0
    at = _app("tiny-chars", ATTRIBUTION, apos="99999", amode="x", atarget="99999",
              abase="²")
    assert at.select_slider(key="attr_pos").value == len(at.select_slider(key="attr_pos")
                                                         .options) - 1
    assert at.radio(key="attr_mode").value == "one"
