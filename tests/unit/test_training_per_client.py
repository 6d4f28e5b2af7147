"""Training slots per client address as well as per browser cookie (an operator setting): a
second private window is a new cookie from the same address."""

from __future__ import annotations

import threading

import pytest

from training import train as tr
from training.tasks import make_task
from server import settings
from server import training_runs as runs

# Long enough to still be going when the test ends it; no folder (nothing saved).
LONG = tr.TrainSettings(task="induction", n_layers=1, n_heads=2, d_model=16, batch_size=8,
                        warmup=5, steps=3000, snapshot_every=500)


@pytest.fixture
def made(monkeypatch):
    monkeypatch.setattr(runs, "_SLOTS", threading.BoundedSemaphore(4))
    started: list[runs.TrainingRun] = []
    yield lambda: started.append(runs.TrainingRun(make_task("induction"), LONG)) or started[-1]
    for run in started:
        run.discard()
        run.join(30)


def test_a_second_cookie_from_the_same_address_is_refused_when_the_operator_limits_it(made):
    first = made()
    runs.start(first, "browser-window-1", client="10.0.0.7", per_client=1)
    second = made()
    with pytest.raises(runs.ServerBusy, match="network address"):
        runs.start(second, "browser-private-window", client="10.0.0.7", per_client=1)
    assert first.running and not second.running and second.thread is None
    other = made()  # another address still gets a slot
    runs.start(other, "browser-other", client="10.0.0.8", per_client=1)
    assert other.running


def test_the_same_browser_may_replace_its_run_and_a_finished_run_frees_the_address(made):
    first = made()
    runs.start(first, "browser-A", client="10.0.0.9", per_client=1)
    again = made()
    runs.start(again, "browser-A", client="10.0.0.9", per_client=1)  # a reload: replaces it
    assert first.discarded and again.running
    again.discard()
    assert again.join(30)
    later = made()
    runs.start(later, "browser-B", client="10.0.0.9", per_client=1)
    assert later.running


def test_without_the_setting_cookies_are_the_only_limit(made, monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_TRAINING_PER_CLIENT", raising=False)
    assert settings.training_runs_per_client() == 0
    for browser in ("browser-1", "browser-2"):
        runs.start(made(), browser, client="10.0.0.10",
                   per_client=settings.training_runs_per_client())
    monkeypatch.setenv("ATTENTION_LAB_TRAINING_PER_CLIENT", "2")
    assert settings.training_runs_per_client() == 2
    with pytest.raises(runs.ServerBusy):
        runs.start(made(), "browser-3", client="10.0.0.10",
                   per_client=settings.training_runs_per_client())
