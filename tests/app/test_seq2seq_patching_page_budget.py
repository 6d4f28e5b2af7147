"""Encoder–decoder patching on the page and the server's working memory (server/working_memory.py),
on a saved random-weight T5 (tests/tiny_seq2seq.py): the cost is said before the click and the
grids run inside the allowance; a server short of memory runs them in smaller pieces and says
so; one too small for even one patched copy says why and offers no button."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

import tiny_seq2seq  # noqa: E402
import server.working_memory as wm  # noqa: E402
from analysis.cost import seq2seq_patching_plan  # noqa: E402
from chart_data import chart_specs  # noqa: E402
from page_links import switch  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SENTENCE = "Attention lets every token look at every other token."
LONG = " ".join([SENTENCE] * 4)  # enough cells that the grids wait for the click
MB = 2**20


def _open(text: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["model"] = str(tiny_seq2seq.folder("t5"))
    at.query_params["text"] = text
    switch(at, "patching").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in ("caption", "info", "warning")
                    for e in at.get(kind)).replace("\\", "")


def _plan(text: str, allowance: int):
    lm, _ = tiny_seq2seq.loaded("t5")
    n_out = lm.run(text).decoder_ids[0][:64].numel()
    return seq2seq_patching_plan(lm.cfg, lm.model.dec_cfg, lm.encode(text).input_ids.shape[1],
                                 n_out, allowance)


@pytest.fixture
def pool(monkeypatch):
    """A fresh pool of `nbytes` for this test (the server's one is process-wide)."""
    def make(nbytes: int) -> wm.WorkingMemory:
        fresh = wm.WorkingMemory(nbytes)
        monkeypatch.setitem(wm._POOL, "pool", fresh)
        return fresh
    return make


def test_the_cost_is_said_before_the_click_and_the_run_gives_it_back(pool):
    shared = pool(512 * MB)
    at = _open(LONG)
    line = re.search(r"Patching every cell takes about ([\d,]+) MB of memory while it runs",
                     _texts(at))
    assert line, _texts(at)
    assert int(line.group(1)) == max(1, round(_plan(LONG, 512 * MB).most / MB))
    assert "pt_s2s_encoder" not in chart_specs(at)
    at.button(key="pt_s2s_run").click().run()
    assert not at.exception
    assert {"pt_s2s_encoder", "pt_s2s_decoder", "pt_s2s_cross"} <= set(chart_specs(at))
    assert shared.used == 0  # given back


def test_a_server_short_of_memory_runs_it_in_smaller_pieces(pool):
    text = "A small bird sang on the garden wall."  # few cells: runs without a click
    plan = _plan(text, 512 * MB)
    assert plan.least < plan.most
    shared = pool(plan.most)
    with shared.reserve(plan.most - plan.least):  # someone else's analysis
        at = _open(text)
    assert not at.exception
    assert "runs in smaller pieces" in _texts(at)
    assert {"pt_s2s_encoder", "pt_s2s_own"} <= set(chart_specs(at))
    assert shared.used == 0


def test_a_server_too_small_for_one_copy_says_why_and_offers_nothing(pool):
    text = "The river ran past the old mill."
    pool(_plan(text, 512 * MB).least - 1)
    at = _open(text)
    assert not at.exception
    assert "more than the" in _texts(at) and "Use a shorter text" in _texts(at)
    assert not any(b.key == "pt_s2s_run" for b in at.button)
    assert "pt_s2s_encoder" not in chart_specs(at)
