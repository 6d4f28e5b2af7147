"""Hosted mode (one shared server for a class): allowlist, limits, bounded cache, no tracebacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
from page_links import open_link  # noqa: E402

from model import BUNDLED, ModelLoadError  # noqa: E402


def test_hosted_picker_offers_only_the_allowlist(hosted):
    import streamlit as st

    at = open_link("attention")
    assert not at.exception
    options = at.selectbox(key="sb_model_choice").options
    from ui.model_names import short_label

    assert sorted(options) == sorted(short_label(n) for n in BUNDLED)
    assert not any("Other" in o for o in options)
    assert st.get_option("client.showErrorDetails") == "none"


def _threads_in_a_new_thread() -> int:
    """torch's thread count as a new thread (like Streamlit's next script run) starts with it:
    a thread that already ran torch keeps its own OpenMP setting."""
    import threading

    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    worker.start()
    worker.join()
    return seen[0]


def test_hosted_mode_runs_torch_on_one_thread_and_local_mode_leaves_it(hosted, monkeypatch):
    from server import settings

    torch.set_num_threads(2)
    assert not open_link("attention").exception
    assert _threads_in_a_new_thread() == settings.HOSTED_TORCH_THREADS == 1
    monkeypatch.delenv("ATTENTION_LAB_HOSTED")
    torch.set_num_threads(2)
    assert not open_link("attention").exception
    assert _threads_in_a_new_thread() == 2


@pytest.mark.parametrize("asked", ["../../../etc", "/etc/passwd", "gpt2", "minilm/../../x"])
def test_hosted_refuses_paths_and_unlisted_names_from_a_link(hosted, asked):
    at = open_link("attention", model=asked)
    assert not at.exception
    assert at.selectbox(key="sb_model_choice").value == "minilm"
    assert any("does not offer" in w.value for w in at.warning)
    assert at.get("plotly_chart")  # the default model still works


def test_hosted_allowlist_from_environment(hosted, monkeypatch):
    from server import settings
    from ui import cache

    monkeypatch.setenv("ATTENTION_LAB_MODELS", "minilm")
    assert settings.allowed_models() == ["minilm"]
    assert settings.model_refusal("minilm") is None
    for name in ("/tmp", "..", "gpt2", "tiny-chars"):
        assert "only loads" in settings.model_refusal(name)
        with pytest.raises(ModelLoadError):
            cache.get_model(name)


def test_local_mode_accepts_anything(monkeypatch):
    from server import settings

    monkeypatch.delenv("ATTENTION_LAB_HOSTED", raising=False)
    assert settings.allowed_models() is None
    assert settings.model_refusal("/any/dir") is None


def test_hosted_text_limit_is_stated_and_applied(hosted):
    from server import settings

    at = open_link("attention")
    at.text_area(key="sb_text").input("word " * 2000).run()  # 10,000 characters
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert f"limit {settings.MAX_CHARS_HOSTED:,}" in warnings
    assert f"{settings.MAX_CHARS_HOSTED:,} characters" in at.text_area(key="sb_text").help


def _fake_trace(n_bytes: int):
    class Fake:
        nbytes = n_bytes
    return Fake()


def test_run_cache_is_bounded_by_entries_and_bytes():
    from server.budget import MemoryBudget

    store = MemoryBudget(max_entries=3, max_bytes=100)
    for i in range(4):
        store.put(("m", str(i)), _fake_trace(10))
    assert len(store) == 3 and store.get(("m", "0")) is None  # oldest went first
    store.get(("m", "1"))  # used: now the newest
    store.put(("m", "big"), _fake_trace(75))  # 10+10+10+75 > 100: evict the oldest until it fits
    assert store.get(("m", "big")) is not None and store.get(("m", "1")) is not None
    assert store.get(("m", "2")) is None
    assert store.nbytes <= 100
    store.put(("m", "huge"), _fake_trace(101))  # larger than the whole budget: not kept
    assert store.get(("m", "huge")) is None


def test_trace_nbytes_counts_the_real_tensors(minilm):
    def size(t):
        return t.numel() * t.element_size()

    short = minilm.run("A short sentence.")
    long = minilm.run("A much longer sentence that has many more tokens than the other. " * 4)
    for trace in (short, long):
        kept = trace.cache._tensors if hasattr(trace.cache, "_tensors") else trace.cache
        cached = sum(size(t) for t in kept.values())
        extra = sum(size(t) for t in (trace.final, trace.pooled, trace.input_ids,
                                      trace.attention_mask, trace.token_type_ids,
                                      trace.special_mask) if t is not None)
        patterns = sum(size(kept[n]) for n in trace.layer_names("attn.hook_pattern"))
        # shared storage (a block's resid_post is the next block's resid_pre) counts once
        assert patterns < trace.nbytes <= cached + extra
    assert long.nbytes > 4 * short.nbytes  # the patterns grow with the square of the length
    assert isinstance(long.final, torch.Tensor)


def test_public_deployment_settings_are_in_the_config_file():
    """.streamlit/config.toml: the settings a shared server relies on, each a real option."""
    import tomllib

    from streamlit import config

    path = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"
    settings_ = tomllib.loads(path.read_text())
    flat = {f"{section}.{key}": value for section, values in settings_.items()
            for key, value in values.items()}
    unknown = [name for name in flat if name not in config.get_config_options()]
    assert not unknown, f"not Streamlit options: {unknown}"
    assert flat["server.maxUploadSize"] == 5
    assert flat["browser.gatherUsageStats"] is False
    assert flat["server.enableXsrfProtection"] is True
    assert flat["runner.magicEnabled"] is False
    # Load (bench/bench_load.py): no full gc.collect after every rerun, no polling file watcher.
    assert flat["runner.postScriptGC"] is False
    assert flat["server.fileWatcherType"] == "none"
