"""AppTest: every bundled lesson walked end to end, each question answered wrongly and then
rightly, each step showing its one figure and none of its page's controls; the lesson list and
a lesson's sentences name models as the sidebar does; a step's class link wraps instead of being
cut; the start page; the teacher's recorder and lessons folder."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_lesson, switch  # noqa: E402

from model import load_model  # noqa: E402
from teaching.facts import find_row  # noqa: E402
from teaching.figures import figure_of  # noqa: E402
from teaching.format import parse_lesson  # noqa: E402
from teaching.pages import BY_PATH  # noqa: E402
from teaching.resolve import step_texts  # noqa: E402
from ui.model_names import short_label  # noqa: E402
from ui.text import md_escape  # noqa: E402

pytestmark = pytest.mark.app

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
BUNDLED = sorted((ROOT / "teaching" / "bundled").glob("*.toml"))
LESSONS = [parse_lesson(p.read_bytes(), p.stem, "bundled") for p in BUNDLED]
# The charts of each step's one figure (teaching/figures.py), for a short text; a question's
# own chart may be beside them, and nothing else.
FIGURE_CHARTS = {("attention", "heatmap"): {"attn_heatmap"},
                 ("attention", "cross-attention"): {"attn_cross"},
                 ("attention", "score-parts"): {"attn_score_grid"},
                 ("attention", "place-grid"): {"attn_positional_grid"},
                 ("heads", "grid"): {"hs_grid"}, ("walkthrough", "step"): {"wk_fig", "wk_fig2"},
                 ("positions", "distance"): {"pos_decay"},
                 ("positions", "similarity"): {"pos_model_sim"},
                 ("training", "run"): set(),  # nothing until the learner starts a run
                 ("effect", "strip"): {"eff_strip"}, ("effect", "heads"): {"eff_heads"},
                 ("compare", "pair"): {"cmp_a", "cmp_b"}, ("compare", "difference"): {"cmp_diff"},
                 ("embeddings", "projection"): {"emb_projection"},
                 ("embeddings", "parts"): {"emb_parts"}, ("embeddings", "lengths"): {"emb_norms"},
                 ("ablation", "importance"): {"abl_grid"},
                 ("logit-lens", "table"): {"lens_table"},
                 ("generate", "next"): {"gen_next_tokens"},
                 ("generate", "attention"): {"gen_attention", "gen_cross"},
                 ("attribution", "parts"): {"attr_layers"},
                 ("attribution", "heads"): {"attr_grid", "attr_cross_grid"},
                 ("patching", "heads"): {"pp_heads", "pt_heads", "pt_s2s_own", "pt_s2s_cross"},
                 ("patching", "stream"): {"pp_resid", "pt_resid", "pt_s2s_encoder"}}
QUESTION_CHART = "lesson_cell_chart"
# The controls that are a step's figure: a training step shows the run's Start button.
FIGURE_CONTROLS = {"train_start"}


@functools.cache
def _model(name):
    return load_model(name)


def _runner(name, text, pair):
    return _model(name), _model(name).run(text, pair or None)


@functools.cache
def _induction_run() -> dict:
    from teaching.facts import induction_run
    from server.training_runs import default_settings

    return induction_run(default_settings("induction"))


def _texts(step):
    return step_texts(step, _runner, train=_induction_run)


def _open(lesson_id: str, step: int = 1) -> AppTest:
    return open_lesson(lesson_id, step)


def _said(at: AppTest, kind: str) -> str:
    return " ".join(str(el.value) for el in at.get(kind))


def _answer_wrong_then_right(at: AppTest, lesson, number: int, step, texts: dict) -> AppTest:
    if step.question.kind == "choice":
        box = at.radio(key=f"lesson_choice_{lesson.id}_{number}")
        wrong = next(o for o in box.options if o != texts["answer"])
        box.set_value(wrong).run()
        at.button(key="lesson_check").click().run()
        assert "Not quite" in _said(at, "warning"), _said(at, "warning")
        at.radio(key=f"lesson_choice_{lesson.id}_{number}").set_value(texts["answer"]).run()
        at.button(key="lesson_check").click().run()
    else:
        trace = _runner(step.model, step.text, step.pair)[1]
        settings = texts["_settings"]
        row = trace.attentions[settings["layer"], settings["head"], find_row(trace.tokens,
                                                                             texts["row"])]
        at.selectbox(key="lesson_cell_box").set_value(int(row.argmin())).run()
        assert "Not quite" in _said(at, "warning"), _said(at, "warning")
        at.selectbox(key="lesson_cell_box").set_value(int(row.argmax())).run()
    assert not at.exception, at.exception
    assert "Right" in _said(at, "success"), _said(at, "success")
    return at


def _shows_its_figure(at: AppTest, step, number: int, settings: dict) -> None:
    """The step's page is open in the step's state and shows the step's figure and nothing
    else of the page (a page with no figure runs whole)."""
    spec = BY_PATH[step.page]
    for name, value in settings.items():  # the page opened in the step's state
        assert at.session_state[spec.key(name)] == value, (number, name)
    assert at.session_state["sb_text"] == step.text
    drawn = {c.key for c in at.get("plotly_chart")} - {QUESTION_CHART}
    if not figure_of(step.page, step.figure):  # a page with no figure runs whole
        charts = drawn
    else:
        charts = FIGURE_CHARTS[step.page, figure_of(step.page, step.figure)]
    assert drawn <= charts, (number, drawn)  # the step's figure only, never the page's rest
    if charts and step.page != "walkthrough":
        assert drawn, (number, step.page)
    elif step.page == "walkthrough":  # a step without a figure shows its tensors' tables
        assert drawn or "· shape `" in _said(at, "markdown") or at.main.dataframe, number
    if figure_of(step.page, step.figure):  # a page with no figure runs whole, title too
        assert not at.get("title"), "a step draws no page title"
        for kind in ("selectbox", "slider", "text_input", "text_area", "toggle", "button"):
            assert not [w for w in at.main.get(kind)  # nor the page's own controls
                        if not str(w.key).startswith("lesson_")
                        and str(w.key) not in FIGURE_CONTROLS], (number, kind)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_bundled_lesson_walks_end_to_end(lesson):
    at = _open(lesson.id)
    for number, step in enumerate(lesson.steps, 1):
        assert not at.exception, (lesson.id, number, at.exception)
        settings, texts, _ = _texts(step)
        texts["_settings"] = settings
        assert texts["title"] in _said(at, "header"), (number, _said(at, "header"))
        if step.question is not None:
            assert not at.get("plotly_chart") or step.question.kind == "cell"  # hidden first
            at = _answer_wrong_then_right(at, lesson, number, step, texts)
        _shows_its_figure(at, step, number, settings)
        assert at.query_params["step"] in (str(number), [str(number)])
        if number < len(lesson.steps):
            at.button(key="lesson_next_bottom").click().run()
    assert at.button(key="lesson_finish_bottom") is not None


def test_a_link_to_a_later_step_opens_that_step_with_its_state():
    lesson = next(lesson for lesson in LESSONS if lesson.id == "minilm-heads")
    at = _open(lesson.id, 3)
    assert not at.exception
    settings, texts, _ = _texts(lesson.steps[2])
    assert texts["title"] in _said(at, "header")
    assert (at.session_state["attn_layer"], at.session_state["attn_head"]) == (
        settings["layer"], settings["head"])
    at.button(key="lesson_prev_top").click().run()
    assert at.query_params["step"] in ("2", ["2"])


@pytest.mark.parametrize("params, words", [
    ({"lesson": "no-such-lesson"}, "There is no lesson called"),
    ({"lesson": "reading-heatmaps", "step": "99"}, "This lesson has steps 1 to"),
    ({"lesson": "reading-heatmaps", "step": "²"}, "This lesson has steps 1 to"),
])
def test_a_bad_lesson_link_gets_a_message(params, words):
    at = AppTest.from_file(APP, default_timeout=300)
    for k, v in params.items():
        at.query_params[k] = v
    switch(at, "lessons").run()
    assert not at.exception
    assert words in _said(at, "error")


def test_the_start_page_shows_a_real_head_and_three_ways_in():
    at = AppTest.from_file(APP, default_timeout=300).run()  # the default page
    assert not at.exception
    charts = at.get("vega_lite_chart")
    assert len(charts) == 1, "the example is drawn"
    trace = load_model("minilm").run("The cat sat on the mat because it was warm.")
    a = trace.attentions.double()
    prev = a.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)  # [layer, head]
    layer, head = divmod(int(prev.argmax()), prev.shape[1])
    text = " ".join(m.value for m in at.markdown)
    share = float(prev.max())  # 0.9997 here: "more than 99%", never a rounded-up "100%"
    said = "more than 99%" if f"{share:.0%}" == "100%" and share < 1 else f"{share:.0%}"
    assert f"{said} of its row goes there" in text and "100%" not in text
    import json
    spec = json.loads(charts[0].proto.spec)
    assert spec["title"]["text"].endswith(f"layer {layer}, head {head}")
    drawn = {(v["q"], v["k"]): v["w"] for v in spec["layer"][0]["data"]["values"]}
    assert len(drawn) == a.shape[-1] ** 2
    assert abs(drawn[("3·sat", "2·cat")] - float(a[layer, head, 3, 2])) < 1e-5  # the run's own
    links = [str(el.proto.page) for el in at.get("page_link")]
    assert any("lessons" in p for p in links) and any("attention" in p for p in links)
    assert any("teach" in p for p in links)


def test_record_a_view_then_edit_and_try_the_draft():
    at = AppTest.from_file(APP, default_timeout=300)
    switch(at, "attention").run()
    at.slider(key="attn_head").set_value(3).run()
    at.button(key="teach_record").click().run()
    assert not at.exception
    assert "Draft lesson: 1 step" in _said(at, "caption")
    switch(at, "teach").run()
    assert not at.exception
    uid = at.session_state["lesson_draft"]["steps"][0]["uid"]
    at.text_input(key="teach_title").input("Heads I like").run()
    at.text_area(key=f"teach_e_{uid}").input("Look at **head three**.").run()
    code = " ".join(c.value for c in at.code)
    assert 'title = "Heads I like"' in code and "head = 3" in code and 'page = "attention"' in code
    at.button(key="teach_try").click().run()
    assert not at.exception
    assert at.query_params["lesson"] in ("heads-i-like", ["heads-i-like"])
    assert "Look at" in " ".join(m.value for m in at.markdown)


def test_a_lessons_folder_lists_good_files_and_names_the_line_of_broken_ones(tmp_path,
                                                                             monkeypatch):
    good = (ROOT / "teaching" / "example_lesson.toml").read_text()
    (tmp_path / "good.toml").write_text(good)
    (tmp_path / "broken.toml").write_text(good.replace('page = "attention"',
                                                       'page = "nowhere"', 1))
    (tmp_path / "range.toml").write_text(good.replace('layer = "{prev.layer}"', "layer = 40", 1))
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=300)
    switch(at, "lessons").run()
    assert not at.exception
    assert "The word before" in " ".join(m.value for m in at.markdown)
    errors = _said(at, "error").replace("\\", "")  # Markdown escapes
    line = 1 + good[:good.index('page = "attention"')].count("\n")
    assert "broken.toml" in errors and "unknown page 'nowhere'" in errors
    assert f"line {line}:" in errors
    assert "range.toml" in errors and "layer 40 is out of range" in errors


def test_hosted_lessons_refuse_models_off_the_allowlist(tmp_path, hosted):
    good = (ROOT / "teaching" / "example_lesson.toml").read_text()
    (tmp_path / "mine.toml").write_text(good)
    hosted.setenv("ATTENTION_LAB_LESSONS", str(tmp_path))
    hosted.setenv("ATTENTION_LAB_MODELS", "tiny-chars")
    at = AppTest.from_file(APP, default_timeout=300)
    switch(at, "lessons").run()
    assert not at.exception
    assert "not on this server's list" in _said(at, "error")
    # bundled lessons whose models are not allowed are not offered either
    assert "Reading an attention heatmap" not in " ".join(m.value for m in at.markdown)
    assert "The causal mask in a decoder" in " ".join(m.value for m in at.markdown)


def test_projector_mode_from_a_link_enlarges_text_and_figures():
    import json

    plain = AppTest.from_file(APP, default_timeout=300)
    switch(plain, "attention").run()
    big = AppTest.from_file(APP, default_timeout=300)
    big.query_params["projector"] = "1"
    switch(big, "attention").run()
    assert not big.exception and big.toggle(key="projector").value is True
    styles = [el.proto.body for el in big.get("html")]
    assert any("font-size" in body for body in styles)
    assert not any("font-size" in el.proto.body for el in plain.get("html"))

    def heatmap(at):
        return next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                    if c.key == "attn_heatmap")

    assert heatmap(big)["layout"]["height"] > heatmap(plain)["layout"]["height"]
    assert heatmap(big)["layout"]["width"] > heatmap(plain)["layout"]["width"]  # square cells
    assert heatmap(big)["layout"]["font"]["size"] > heatmap(plain)["layout"].get(
        "font", {}).get("size", 12)
    big.toggle(key="projector").set_value(False).run()
    assert "projector" not in big.query_params


DECODER_LAB_LESSON = """
title = "Attention, effect and the decoder lab"
model = "tiny-induction"
text = "abcdefgh abcdefgh abc"

[[steps]]
title = "Attention beside its effect"
page = "effect"
layer = 1
head = 2
explain = "Where the head looks, beside what changes the prediction."

[[steps]]
title = "Writing on"
page = "generate"
explain = "One token at a time."

[[steps]]
title = "Which parts made the logit"
page = "attribution"
explain = "Every head's share of the score."

[[steps]]
title = "Find the circuit"
page = "patching"
explain = "Put one piece back from the clean run."
"""


def test_a_lesson_can_open_the_effect_page_and_the_decoder_lab(tmp_path, monkeypatch):
    (tmp_path / "lab.toml").write_text(DECODER_LAB_LESSON)
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(tmp_path))
    at = _open("lab")
    lesson = parse_lesson(DECODER_LAB_LESSON.encode(), "lab", "folder")
    for number, (page, chart) in enumerate([("effect", "eff_strip"), ("generate", "gen_next_tokens"),
                                            ("attribution", "attr_layers"),
                                            ("patching", "pp_heads")], 1):
        assert not at.exception, (page, at.exception)
        assert lesson.steps[number - 1].page == page
        assert lesson.steps[number - 1].title in _said(at, "header"), page
        if page == "effect":
            assert (at.session_state["eff_layer"], at.session_state["eff_head"]) == (1, 2)
        drawn = {c.key for c in at.get("plotly_chart")}
        assert chart in drawn, (page, drawn)  # a short text: each page draws without a click
        if number < 4:
            at.button(key="lesson_next_bottom").click().run()


def test_the_lesson_list_names_models_as_the_sidebar_does():
    at = open_lesson()
    assert not at.exception, at.exception
    captions = _said(at, "caption")
    for model in ("minilm", "tiny-induction", "tiny-reverse"):  # escaped: Markdown source
        assert md_escape(short_label(model)) in captions, (model, captions)
    assert "minilm" not in captions  # the id, nowhere without its label
    for model in ("tiny-induction", "tiny-reverse"):
        assert captions.count(md_escape(model)) == captions.count(md_escape(short_label(model)))


def test_a_lesson_sentence_names_the_model_as_the_app_does():
    at = _open("reading-heatmaps", 4)
    assert not at.exception, at.exception
    said = _said(at, "markdown")
    assert "Each layer of MiniLM has" in said, said


def test_the_class_link_of_a_step_wraps():
    at = _open("reading-heatmaps", 3)
    assert not at.exception
    link = next(c for c in at.code if "lesson=reading-heatmaps" in c.value)
    assert link.proto.wrap_lines
