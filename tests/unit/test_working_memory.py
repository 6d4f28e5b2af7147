"""The server's working-memory allowance (server/working_memory.py): analyses that fit run at once,
the next one runs smaller or waits its turn, and one that can never fit is told why."""

from __future__ import annotations

import threading
import time

import pytest

from server.working_memory import (
    DEFAULT_MB, ENV, MB, NoRoom, WorkingMemory, allowance_from_env, megabytes,
)


def test_what_fits_is_granted_whole_and_given_back():
    pool = WorkingMemory(512 * MB)
    with pool.reserve(300 * MB, 100 * MB) as grant:
        assert grant.bytes == 300 * MB and not grant.shrunk and grant.waited < 1
        assert pool.used == 300 * MB and pool.free == 212 * MB
    assert pool.used == 0


def test_a_second_analysis_runs_smaller_when_only_its_least_fits():
    pool = WorkingMemory(512 * MB)
    with pool.reserve(400 * MB, 100 * MB):
        with pool.reserve(400 * MB, 100 * MB) as second:
            assert second.shrunk and second.bytes == 112 * MB  # what was left
            assert pool.used == 512 * MB
    assert pool.used == 0


def test_one_that_does_not_fit_waits_for_the_first_and_says_so():
    pool = WorkingMemory(512 * MB)
    started, waits, order = threading.Event(), [], []
    first = pool.reserve(450 * MB, 450 * MB)
    first.__enter__()

    def second() -> None:
        with pool.reserve(300 * MB, 200 * MB, on_wait=lambda s, ahead: waits.append(ahead)) \
                as grant:
            order.append(("second", grant.bytes, grant.waited))

    thread = threading.Thread(target=second)
    thread.start()
    started.wait(0.3)
    time.sleep(0.3)
    assert thread.is_alive() and waits and waits[0] == 0  # waiting, first in line
    assert pool.waiting == 1 and pool.used == 450 * MB
    first.__exit__(None, None, None)
    thread.join(5)
    assert order and order[0][1] == 300 * MB and order[0][2] >= 0.25
    assert pool.used == 0 and pool.waiting == 0


def test_the_wait_is_bounded_and_ends_with_a_message():
    pool = WorkingMemory(100 * MB)
    with pool.reserve(100 * MB):
        start = time.monotonic()
        with pytest.raises(NoRoom, match="busy with other analyses"):
            with pool.reserve(80 * MB, wait_seconds=0.3):
                pass
        assert 0.25 <= time.monotonic() - start < 3
    assert pool.used == 0 and pool.waiting == 0


def test_too_big_for_the_whole_allowance_is_refused_at_once_in_plain_words():
    pool = WorkingMemory(512 * MB)
    assert pool.too_big(100 * MB) is None
    with pytest.raises(NoRoom) as refused:
        with pool.reserve(2048 * MB, 700 * MB):
            pass
    assert "700 MB" in str(refused.value) and "512 MB" in str(refused.value)
    assert pool.used == 0


def test_an_ask_above_the_allowance_with_a_small_least_runs_in_the_whole_allowance():
    """Its usual chunks are those that fit the allowance: not 'shrunk' by other users."""
    pool = WorkingMemory(512 * MB)
    with pool.reserve(4096 * MB, 100 * MB) as grant:
        assert grant.bytes == 512 * MB and not grant.shrunk


def test_first_come_first_served():
    """A small request that arrives after a waiting big one waits behind it."""
    pool = WorkingMemory(100 * MB)
    holder = pool.reserve(60 * MB)
    holder.__enter__()
    got = []

    def ask(name: str, size: int) -> None:
        with pool.reserve(size, wait_seconds=5):
            got.append(name)
            time.sleep(0.05)

    big = threading.Thread(target=ask, args=("big", 90 * MB))
    big.start()
    time.sleep(0.2)
    small = threading.Thread(target=ask, args=("small", 30 * MB))  # 40 MB are free
    small.start()
    time.sleep(0.3)
    assert got == []  # small did not jump the line
    holder.__exit__(None, None, None)
    big.join(5)
    small.join(5)
    assert got == ["big", "small"]


def test_many_threads_never_hold_more_than_the_allowance():
    pool = WorkingMemory(256 * MB)
    highest, lock = [0], threading.Lock()

    def work() -> None:
        for _ in range(5):
            with pool.reserve(120 * MB, 40 * MB, wait_seconds=10):
                with lock:
                    highest[0] = max(highest[0], pool.used)
                time.sleep(0.01)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert 120 * MB <= highest[0] <= 256 * MB
    assert pool.used == 0


def test_a_failing_analysis_gives_its_memory_back():
    pool = WorkingMemory(100 * MB)
    with pytest.raises(RuntimeError):
        with pool.reserve(80 * MB):
            raise RuntimeError("the analysis failed")
    assert pool.used == 0


def test_the_allowance_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert allowance_from_env() == DEFAULT_MB * MB
    monkeypatch.setenv(ENV, "300")
    assert allowance_from_env() == 300 * MB
    monkeypatch.setenv(ENV, "lots")
    assert allowance_from_env() == DEFAULT_MB * MB
    monkeypatch.setenv(ENV, "1")
    assert allowance_from_env() == 64 * MB  # never less than 64 MB
    with pytest.raises(ValueError):
        WorkingMemory(0)


def test_sizes_in_words():
    assert megabytes(240 * MB) == "240 MB"
    assert megabytes(1536 * MB) == "1.5 GB"
    assert megabytes(10) == "1 MB"
