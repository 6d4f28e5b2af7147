"""Every computation goes through the run queue and the memory budget, fragments included; a
ceiling on resident memory refuses new work; runs nobody reads leave the budget."""

from __future__ import annotations

import threading
import time

import pytest

from ui import cache
from server.budget import MemoryBudget
from server.gate import MemoryCeiling, RunQueue


class Sized:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


class Line:
    """Stands in for ui/busy.BusyLine: records the places it was shown."""
    shown: list[int] = []

    def __call__(self, place: int, seconds: float) -> None:
        Line.shown.append(place)

    def clear(self) -> None:
        pass


@pytest.fixture
def server(monkeypatch):
    """A one-slot queue, a small budget and no ceiling, in place of the server's."""
    queue, store = RunQueue(slots=1), MemoryBudget(max_entries=10, max_bytes=10**6)
    ceiling = MemoryCeiling(lambda: None, lambda: 0)
    monkeypatch.setattr(cache, "run_queue", lambda: queue)
    monkeypatch.setattr(cache, "_run_cache", lambda: store)
    monkeypatch.setattr(cache, "memory_ceiling", lambda: ceiling)
    monkeypatch.setattr(cache.busy, "BusyLine", Line)
    Line.shown = []
    return queue, store


def test_a_computation_outside_any_slot_waits_its_turn_and_is_told_its_place(server):
    """A fragment's rerun (a slider move) whose run was evicted never passes app.py's slot: its
    cache miss must still wait for the queue, as any page run does."""
    queue, store = server
    computed_at: list[float] = []

    @cache.shared("fragment-test")
    def heavy(text: str) -> Sized:
        computed_at.append(time.monotonic())
        return Sized(10)

    release, holding = threading.Event(), threading.Event()

    def page_run() -> None:  # another user's page run holds the only slot
        with queue.slot():
            holding.set()
            release.wait(5)

    other = threading.Thread(target=page_run)
    other.start()
    holding.wait(5)
    results: list[Sized] = []
    fragment = threading.Thread(target=lambda: results.append(heavy("evicted text")))
    fragment.start()
    time.sleep(0.8)
    assert computed_at == [] and queue.waiting == 1  # in line, not computing beside the slot
    released = time.monotonic()
    release.set()
    fragment.join(5)
    other.join(5)
    assert results and results[0].nbytes == 10
    assert computed_at[0] >= released
    assert Line.shown and Line.shown[0] == 1  # place 1 was shown while it waited
    assert ("fragment-test", "evicted text") in store


def test_a_run_that_holds_a_slot_computes_without_taking_a_second_one(server):
    queue, store = server

    @cache.shared("nested-test")
    def inner(text: str) -> Sized:
        return Sized(5)

    @cache.shared("outer-test")
    def outer(text: str) -> Sized:
        return Sized(inner(text).nbytes + 1)  # a miss inside a miss

    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(_in_slot(queue, lambda: outer("t"))))
    worker.start()
    worker.join(5)
    assert done == [6]  # with one slot, taking a second one would never return
    assert Line.shown == []


def _in_slot(queue: RunQueue, fn):
    with queue.slot():
        return fn().nbytes


def test_a_cache_hit_needs_no_turn(server):
    queue, store = server
    store.put(("hit-test", "x"), Sized(3))

    @cache.shared("hit-test")
    def never(text: str) -> Sized:
        raise AssertionError("a stored value is not computed again")

    with queue.slot():  # the only slot is taken: a hit must not wait for it
        got: list[Sized] = []
        t = threading.Thread(target=lambda: got.append(never("x")))
        t.start()
        t.join(2)
    assert got and got[0].nbytes == 3


def test_over_the_memory_ceiling_new_work_is_refused_until_memory_falls():
    rss = {"now": 900}
    released: list[int] = []
    ceiling = MemoryCeiling(lambda: 1000, lambda: rss["now"], lambda: released.append(1))
    assert ceiling.refusal() is None
    rss["now"] = 1500
    message = ceiling.refusal()
    assert message and "memory" in message and "try again" in message
    assert released == [1]  # it first handed free memory back and looked again
    rss["now"] = 800
    assert ceiling.refusal() is None and ceiling.refused == 1


def test_freeing_memory_back_to_the_system_can_lift_the_refusal():
    rss = {"now": 1500}
    ceiling = MemoryCeiling(lambda: 1000, lambda: rss["now"], lambda: rss.update(now=700))
    assert ceiling.refusal() is None and ceiling.refused == 0


def test_a_refused_computation_stops_the_run_with_a_message_and_computes_nothing(
        server, monkeypatch):
    queue, store = server
    ceiling = MemoryCeiling(lambda: 1, lambda: 2)
    monkeypatch.setattr(cache, "memory_ceiling", lambda: ceiling)
    shown: list[str] = []
    monkeypatch.setattr(cache.st, "warning", lambda text, **kw: shown.append(text))

    @cache.shared("refused-test")
    def heavy(text: str) -> Sized:
        raise AssertionError("nothing is computed over the ceiling")

    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    with pytest.raises(StopException):
        heavy("x")
    assert shown and "short of memory" in shown[0]
    assert queue.waiting == 0 and ("refused-test", "x") not in store


def test_the_ceiling_is_model_plus_budget_plus_margin_unless_set(monkeypatch):
    from server import settings

    monkeypatch.setenv("ATTENTION_LAB_MEMORY_MB", "100")
    monkeypatch.setenv("ATTENTION_LAB_MEMORY_MARGIN_MB", "50")
    monkeypatch.delenv("ATTENTION_LAB_MEMORY_CEILING_MB", raising=False)
    assert settings.memory_ceiling(10 * 2**20) == (10 + 100 + 50) * 2**20
    monkeypatch.setenv("ATTENTION_LAB_MEMORY_CEILING_MB", "3")
    assert settings.memory_ceiling(10 * 2**20) == 3 * 2**20
    monkeypatch.setenv("ATTENTION_LAB_MEMORY_CEILING_MB", "0")
    assert settings.memory_ceiling(10 * 2**20) is None


def test_runs_nobody_has_read_for_a_while_leave_the_budget():
    now = {"t": 0.0}
    store = MemoryBudget(max_entries=10, max_bytes=10**6, clock=lambda: now["t"])
    store.put("old", Sized(100))
    store.put("read", Sized(200))
    now["t"] = 100.0
    store.get("read")  # someone still looks at this one
    store.put("new", Sized(300))
    now["t"] = 170.0
    assert store.drop_idle(120) == 100
    assert "old" not in store and "read" in store and "new" in store
    assert store.evicted_bytes >= 100  # the memory keeper hands it back to the system
    now["t"] = 1000.0
    assert store.drop_idle(120) == 500 and len(store) == 0 and store.nbytes == 0


def test_the_idle_time_is_short_on_a_shared_server_and_can_be_set(monkeypatch):
    from server import settings

    monkeypatch.delenv("ATTENTION_LAB_IDLE_SECONDS", raising=False)
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    assert settings.idle_seconds() == settings.IDLE_SECONDS_HOSTED == 180
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "0")
    assert settings.idle_seconds() == settings.IDLE_SECONDS_LOCAL
    monkeypatch.setenv("ATTENTION_LAB_IDLE_SECONDS", "20")
    assert settings.idle_seconds() == 20


def test_the_memory_keeper_drops_idle_runs_and_hands_the_memory_back(monkeypatch):
    now = {"t": 0.0}
    store = MemoryBudget(max_entries=10, max_bytes=10**6, clock=lambda: now["t"])
    store.put("class run", Sized(500))
    monkeypatch.setitem(cache._KEEPER, "dirty_until", 0.0)
    released: list[int] = []
    now["t"] = 60.0
    cache.keep_memory(store, idle=180, release=lambda: released.append(1))
    assert "class run" in store and released == []  # read a minute ago: kept, nothing freed
    now["t"] = 200.0
    cache.keep_memory(store, idle=180, release=lambda: released.append(1))
    assert "class run" not in store and released == [1]
