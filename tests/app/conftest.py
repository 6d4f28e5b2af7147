"""Fixtures shared by the app tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def hosted(monkeypatch):
    """Hosted mode for one test (the default allowlist); yields monkeypatch for more settings.
    Process-wide settings that hosted mode changes are put back afterwards."""
    import streamlit as st

    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    monkeypatch.delenv("ATTENTION_LAB_MODELS", raising=False)
    before = st.get_option("client.showErrorDetails")
    threads = torch.get_num_threads()
    yield monkeypatch
    st.set_option("client.showErrorDetails", before)
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def no_drafts_left():
    """Teach drafts are kept per browser on the server (server/drafts.py), and every AppTest of
    this process looks like the same browser: each test starts with none."""
    from server import drafts

    drafts.forget_all()
    yield
    drafts.forget_all()
