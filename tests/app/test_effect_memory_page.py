"""The effect page and the server's working memory (server/working_memory.py): the cost is on the
page before the click; a server short of memory runs the click in smaller pieces and says so,
a busy one says so after a bounded wait, and one too small for even the smallest pieces says
why and offers a shorter text instead of the button. The ablation sweep says its cost too."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import open_with_sidebar, switch  # noqa: E402

import server.working_memory as wm  # noqa: E402
from analysis.ablation import Inputs  # noqa: E402
from analysis.cost import effect_plan  # noqa: E402
from analysis.effect_target import make_target, visible_length  # noqa: E402
from chart_data import chart_specs as _charts  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "effect"
LONG = " ".join(["the cat sat on the mat"] * 30)  # 180 words: heavy, waits for the click
OTHER = " ".join(["a dog slept by the door"] * 30)  # another text: not in the server's cache
MB = 2**20


def _texts(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "warning", "error")
             for e in at.get(kind)]
    return " ".join(str(p) for p in parts).replace("\\", "")


@pytest.fixture
def pool(monkeypatch):
    """A fresh pool for this test (the server's one is process-wide)."""
    def make(megabytes: int) -> wm.WorkingMemory:
        fresh = wm.WorkingMemory(megabytes * MB)
        monkeypatch.setitem(wm._POOL, "pool", fresh)
        return fresh
    return make


def _plan(minilm, allowance: int):
    inputs = Inputs.encode(minilm, LONG)
    k = visible_length(make_target(minilm, inputs, pooling="mean"), inputs.input_ids.shape[1])
    return effect_plan(minilm.cfg, k, 32, True, allowance)


def test_the_cost_is_said_before_the_click(minilm, pool):
    pool(512)
    at = open_with_sidebar(PAGE, text=LONG)
    line = re.search(r"Measuring every token takes about ([\d,]+) MB of memory while it runs "
                     r"and (about \d+ (s|min)|about a second|between \d+( s)? and \d+ (s|min))\.",
                     _texts(at))
    assert line, _texts(at)
    assert int(line.group(1).replace(",", "")) == round(_plan(minilm, 512 * MB).most / MB)
    assert at.select_slider(key="eff_steps").value == 32
    assert "The 32 steps you chose" in _texts(at)  # only fewer steps ran at once


def test_a_server_short_of_memory_runs_it_in_smaller_pieces(minilm, pool):
    shared = pool(512)
    plan = _plan(minilm, 512 * MB)
    assert plan.least < plan.most
    others = shared.reserve(512 * MB - plan.least - MB)  # someone else's analysis
    others.__enter__()
    try:
        at = open_with_sidebar(PAGE, text=LONG)
        at.button(key="eff_run").click().run()
    finally:
        others.__exit__(None, None, None)
    assert not at.exception
    assert "runs in smaller pieces" in _texts(at)
    assert "eff_strip" in _charts(at)
    assert shared.used == 0  # given back


def test_a_busy_server_says_so_after_a_bounded_wait(pool, monkeypatch):
    shared = pool(512)
    monkeypatch.setattr(wm, "WAIT_SECONDS", 1.0)
    others = shared.reserve(512 * MB)
    others.__enter__()
    try:
        at = open_with_sidebar(PAGE, text=OTHER)
        at.button(key="eff_run").click().run()
    finally:
        others.__exit__(None, None, None)
    assert not at.exception
    assert "busy with other analyses" in _texts(at)
    assert "eff_strip" not in _charts(at)


def test_a_server_too_small_for_it_says_why_and_offers_a_shorter_text(minilm, pool):
    pool(64)
    at = open_with_sidebar(PAGE, text=" ".join(["the cat sat on the mat"] * 80))  # 480 words
    text = _texts(at)
    assert "more than the 64 MB this server allows" in text
    assert not any(b.key == "eff_run" for b in at.button)
    shorter = at.button(key="eff_short_mem")  # the longest start of the text that fits
    n = int(re.search(r"first (\d+) tokens", shorter.label).group(1))
    assert 2 < n < 482
    assert effect_plan(minilm.cfg, n, 1, True).least <= 64 * MB
    assert effect_plan(minilm.cfg, n + 8, 1, True).least > 64 * MB


def test_the_ablation_sweep_says_its_cost_and_runs_inside_the_allowance(minilm, pool):
    from analysis.cost import sweep_plan

    shared = pool(512)
    text = " ".join(["a bird sang on the wall"] * 15)  # 90 words: the sweep waits for a click
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.text_area(key="sb_text").input(text).run()
    switch(at, "ablation").run()
    line = re.search(r"Measuring every head takes about ([\d,]+) MB of memory", _texts(at))
    n_tokens = minilm.encode(text).input_ids.shape[1]
    assert line and int(line.group(1)) == round(sweep_plan(minilm.cfg, n_tokens, 512 * MB).most
                                                / MB)
    assert "abl_grid" not in _charts(at)
    at.button(key="abl_sweep_btn").click().run()
    assert not at.exception and "abl_grid" in _charts(at)
    assert shared.used == 0
