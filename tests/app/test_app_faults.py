"""Faults seen through the app: CUDA missing or out of memory, simulated on this CPU machine."""

from __future__ import annotations

import os
from pathlib import Path

import torch

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

from model import LoadedModel, load_model  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _texts(at) -> str:
    return " ".join(el.value for kind in ("warning", "info", "caption")
                    for el in list(getattr(at, kind)) + list(getattr(at.sidebar, kind)))


def test_cuda_out_of_memory_during_a_run_falls_back_to_cpu_with_a_notice(monkeypatch):
    import ui.cache

    cpu = load_model("minilm")
    as_if_cuda = LoadedModel("minilm", cpu.model, cpu.tokenizer, torch.device("cuda"))
    real_forward = LoadedModel._forward

    def forward(self, model, enc, dev, keep):
        if dev.type == "cuda":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")
        return real_forward(self, model, enc, dev, keep)

    monkeypatch.setattr(LoadedModel, "_forward", forward)
    monkeypatch.setattr(ui.cache, "_load", lambda name, _progress=None: as_if_cuda)
    monkeypatch.setattr(ui.cache, "_run_cache", lambda: ui.cache.MemoryBudget(4, 2**30))
    at = AppTest.from_file(APP, default_timeout=120)
    switch(at, "attention")
    at.session_state["sb_text"] = "A text that runs out of GPU memory."
    at.run()
    assert not at.exception
    assert "ran on the CPU" in _texts(at)
    assert at.get("plotly_chart")  # the heatmap is there, computed on the CPU


def test_cuda_absent_loads_on_cpu_and_says_so(monkeypatch):
    import ui.cache

    monkeypatch.setattr(ui.cache, "_load", lambda name, _progress=None: load_model(name, device="cuda"))
    at = AppTest.from_file(APP, default_timeout=120)
    switch(at, "attention").run()
    assert not at.exception
    if not torch.cuda.is_available():
        assert "not usable here; using the CPU" in _texts(at)
    assert at.get("plotly_chart")
