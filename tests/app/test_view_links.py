"""A view's link opens exactly that view, on every page, for MiniLM, tiny-chars and
tiny-induction: view state -> link -> page -> the view the page used, compared whole.

Each page is given a value other than its default for every setting it draws with that model,
so a page that ignores a declared setting fails here; a page that reads a setting it did not
declare raises (ui/view_state.PageView), and fails here too. The table below must name every
declared setting of every page for some model (checked), so a new setting needs a row.
"""

from __future__ import annotations

import pytest

from page_links import open_view, shown_view
from teaching.pages import BY_PATH, PAGE_SPECS
from ui.view_state import ViewState

TEXT = "The cat sat on the mat because it was warm."
B = "The dog sat on the mat because it was warm."
MODELS = ("minilm", "tiny-chars", "tiny-induction")
DECODER = {"pos": 3}  # a decoder-only page: nothing to set on MiniLM (the page says why)

# page -> model -> settings (none at its default). A model missing from a page's table gets {}.
VIEWS: dict[str, dict[str, dict]] = {
    "attention": {
        "minilm": {"layer": 1, "head": 2, "average": True, "hide_special": True,
                   "view": "Token lines"},
        "tiny-chars": {"layer": 1, "head": 1, "mode": "Attention rollout", "view": "Download",
                       "window": "2-8"},
        "tiny-induction": {"layer": 1, "head": 1, "view": "Where a row comes from (Q·K)",
                           "cell_query": 5, "cell_key": 2},
        "tiny-reverse": {"layer": 0, "head": 1, "cross_layer": 0, "cross_head": 1,
                         "view": "Why this score", "cell_in": "cross", "cell_query": 3,
                         "cell_key": 1},
    },
    "effect": {
        "minilm": {"layer": 2, "head": 3, "steps": 16, "baseline": "zero", "occlusion": "mask",
                   "words": "gradient_x_input"},
        "tiny-chars": {"layer": 0, "head": 1, "pos": 3, "steps": 8},
        "tiny-induction": {"layer": 0, "average": True, "pos": 5},
    },
    "heads": {m: {"stat": s} for m, s in zip(MODELS, ("previous", "self", "distance"))},
    "compare": {m: {"text_b": B, "layer": 1, "head": 1} for m in MODELS},
    "ablation": {m: {"heads": [(0, 1), (1, 0)], "mode": "mean"} for m in MODELS},
    "logit-lens": {"tiny-chars": DECODER, "tiny-induction": {"pos": 5}},
    "generate": {m: {"n": 5, "mode": "sample", "temp": 0.5, "topk": 5, "topp": 0.9, "seed": 7,
                     "step": 2, "layer": 0, "head": 1} for m in MODELS[1:]},
    "attribution": {m: {"pos": 3, "mode": "diff", "target": 1, "base": 2}
                    for m in MODELS[1:]},
    "patching": {
        "minilm": {"mode": "prompts", "corrupt": B},
        "tiny-chars": {"mode": "prompts", "corrupt": "The cat sat on the mat because it was cold.",
                       "answer": 1, "wrong": 2, "all": True},
        "tiny-induction": {"mode": "preset", "len": 8, "which": "second", "seed": 3, "seqs": 4},
    },
    "walkthrough": {m: {"step": 3, "layer": 1, "head": 1, "teacher": True} for m in MODELS},
    "positions": {m: {"n_positions": 40, "d_model": 32, "grouped": True, "skip_first": skip}
                  for m, skip in zip(MODELS, (False, True, True))},
    "embeddings": {m: {"method": "t-SNE", "layer": 1, "dims": "3D"} for m in MODELS},
    "training": {m: {"task": "chars"} for m in MODELS},
}
PAIRS = {("walkthrough", "minilm"): "It was sunny."}  # the batch switch needs a sentence pair
VIEWS["walkthrough"]["minilm"] = VIEWS["walkthrough"]["minilm"] | {"batch": True}
LESSON_PAGES = [spec.path for spec in PAGE_SPECS if spec.lesson]
CASES = [(page, model) for page in LESSON_PAGES for model in sorted(set(MODELS)
                                                                     | set(VIEWS[page]))]


def view_of(page: str, model: str) -> ViewState:
    return ViewState(page, model, TEXT, PAIRS.get((page, model), ""),
                     VIEWS[page].get(model, {}))


def test_every_declared_setting_has_a_value_to_try_and_none_is_a_default():
    for page in LESSON_PAGES:
        spec = BY_PATH[page]
        named = {name for values in VIEWS[page].values() for name in values}
        assert named == set(spec.by_name), page
        for model in VIEWS[page]:
            view = view_of(page, model)
            assert view.normal().settings == view.settings, (page, model)


@pytest.mark.parametrize(("page", "model"), CASES)
def test_a_view_link_opens_that_view(page, model):
    view = view_of(page, model).normal()
    at = open_view(view)
    assert shown_view(at, page) == view
    # and "Record this view as a step" records exactly that view
    at.button(key="teach_record").click().run()
    assert not at.exception, [e.value for e in at.exception]
    step = at.session_state["lesson_draft"]["steps"][-1]
    recorded = ViewState(step["page"], step["model"], step["text"], step["pair"],
                         step["settings"]).normal()
    assert recorded == view


def test_a_view_survives_its_link_as_text():
    """to_link and from_link are each other's inverse, long texts and every kind included."""
    long_text = "word " * 400
    for page in LESSON_PAGES:
        for model in VIEWS[page]:
            view = ViewState(page, model, long_text, "a pair", VIEWS[page][model]).normal()
            link = view.to_link("http://host:8501")
            path, _, query = link.partition("?")
            from urllib.parse import parse_qsl

            assert path == f"http://host:8501/{page}"
            assert ViewState.from_link(page, dict(parse_qsl(query))) == view


@pytest.mark.parametrize("page", LESSON_PAGES)
def test_a_link_with_junk_in_every_setting_opens_the_page_on_its_defaults(page):
    from page_links import open_page

    junk = {s.url: "<script>alert(1)</script>99999999" for s in BY_PATH[page].settings}
    at = open_page(page, "tiny-chars", TEXT, **junk)
    shown = shown_view(at, page)  # a text (a second prompt) is the learner's own: kept as text
    kept = {n: v for n, v in shown.settings.items() if BY_PATH[page].by_name[n].kind != "text"}
    assert not any("script" in str(v) for v in kept.values()), kept
    assert not any(c.value.count("<script>") for c in at.markdown)  # never rendered as HTML
