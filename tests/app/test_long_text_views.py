"""AppTest: a long text (ui.examples.LONG) stays readable on patching, effect, walkthrough and
embeddings. Patching opens zoomed on the change with a switch to every position and shows
the changed word; effect colours the words themselves by a chosen measure; the walkthrough
folds its contents into one box and its tokens table holds and counts every row; the
projections say how many points are named."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from chart_data import chart_specs as _charts, plotly_array as _array  # noqa: E402
from page_links import open_page  # noqa: E402
from ui.examples import LONG  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _markdown(at) -> str:
    return "\n".join(m.value for m in list(at.markdown) + list(at.caption))


def test_patching_a_long_prompt_opens_on_the_change_with_a_switch_to_all():
    at = open_page("patching", "tiny-induction", LONG, pmode="prompts")
    grid = _charts(at)["pt_resid"]
    n_tokens = int(re.search(r"Clean: (\d+) tokens", _markdown(at)).group(1))
    columns = len(grid["data"][0]["x"])
    assert columns < n_tokens  # zoomed
    assert "zoomed:" in grid["layout"]["title"]["subtitle"]["text"]
    ticks = grid["layout"]["xaxis"]["ticktext"]
    assert any("→" in t for t in ticks) and any(t.startswith("⋯") for t in ticks)
    assert ":orange-background[**" in _markdown(at)  # the changed word, in both prompts
    at.toggle(key="pt_all").set_value(True).run()
    assert not at.exception
    assert len(_charts(at)["pt_resid"]["data"][0]["x"]) == n_tokens


def test_effect_colours_every_word_of_a_long_text_by_the_chosen_measure():
    at = open_page("effect", "minilm", LONG)
    text = _charts(at)["eff_text_fig"]["data"][0]
    n_tokens = len(text["text"])
    assert n_tokens > 300 and "[CLS]" in text["text"]
    assert max(_array(text["y"])) >= 20  # wrapped into lines
    radio = at.radio(key="eff_words")
    assert radio.value == "integrated_gradients" and "Attention" in radio.options
    assert "Occlusion" not in radio.options  # not run on 325 tokens: nothing to colour by
    before = list(text["marker"]["color"])
    radio.set_value("attention").run()
    after = _charts(at)["eff_text_fig"]
    assert not at.exception and list(after["data"][0]["marker"]["color"]) != before
    assert "attention" in after["layout"]["title"]["text"]


def test_the_walkthrough_folds_its_contents_and_counts_its_tokens():
    at = open_page("walkthrough", "minilm", LONG)
    assert not [r for r in at.radio if r.key == "wk_step"]  # no 27-line list
    box = at.selectbox(key="wk_step")
    assert box.value == 1 and len(box.options) > 20
    table = next(d.value for d in at.dataframe if "mask" in d.value.columns)
    captions = _markdown(at)
    assert f"All {len(table)} positions; scroll the table" in captions and len(table) > 300
    box.set_value(5).run()
    assert not at.exception and at.subheader[0].value.startswith("5. ")


def test_the_projections_say_how_many_points_are_named():
    at = open_page("embeddings", "minilm", LONG)
    charts = _charts(at)
    for key in ("emb_projection", "emb_qk"):
        sub = charts[key]["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")
        named = sum(1 for trace in charts[key]["data"] for t in (trace.get("text") or [])
                    if t and not trace.get("mode", "").startswith("lines"))
        assert re.search(rf"\b{named} of \d+ points", sub), (key, named, sub)
    assert np.isfinite(named)
