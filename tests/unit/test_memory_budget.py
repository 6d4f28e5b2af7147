"""One memory budget for the whole server, and a queue instead of a pile-up (issue: a class
can't run the server out of memory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from server.budget import MemoryBudget, sizeof
from server.gate import RunQueue

ROOT = Path(__file__).resolve().parents[2]


class Sized:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def test_sizeof_counts_shared_storage_once_and_figures_by_their_data():
    t = torch.zeros(1000)  # 4,000 bytes
    assert sizeof(t) == 4000
    assert sizeof([t, t[10:], t.view(10, 100)]) == 4000 + 24  # one storage, three views
    a = np.zeros((100, 100))
    assert sizeof({"a": a, "b": a}) >= 80_000 and sizeof({"a": a, "b": a}) < 81_000
    import plotly.graph_objects as go

    fig = go.Figure(go.Heatmap(z=np.zeros((300, 300))))
    assert sizeof(fig) >= 300 * 300 * 8


def test_budget_evicts_least_recently_used_and_never_keeps_more_than_its_bytes():
    store = MemoryBudget(max_entries=10, max_bytes=100)
    for i in range(5):
        store.put(i, Sized(30))
        assert store.nbytes <= 100
    assert 0 not in store and 4 in store
    store.get(2)  # used: now the newest
    store.put("new", Sized(30))
    assert 2 in store and 3 not in store
    assert store.evicted_bytes > 0


def test_a_value_that_grows_after_it_was_stored_is_measured_again():
    store = MemoryBudget(max_entries=10, max_bytes=100)
    grows = Sized(10)
    store.put("grows", grows)
    store.put("other", Sized(50))
    grows.nbytes = 60  # a trace that derived its attention scores on first read
    assert store.get("grows") is grows
    assert store.nbytes <= 100 and "other" not in store


def test_same_missing_key_is_computed_once_for_simultaneous_callers():
    store = MemoryBudget(max_entries=10, max_bytes=10**6)
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.3)
        return Sized(10)

    results = []
    threads = [threading.Thread(target=lambda: results.append(store.get_or_compute("k", compute)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_a_failed_compute_lets_the_next_caller_try_and_too_big_values_are_still_returned():
    store = MemoryBudget(max_entries=10, max_bytes=100)
    with pytest.raises(ValueError):
        store.get_or_compute("k", lambda: (_ for _ in ()).throw(ValueError("bad text")))
    assert store.get_or_compute("k", lambda: Sized(5)).nbytes == 5
    huge = store.get_or_compute("huge", lambda: Sized(1000))
    assert huge.nbytes == 1000 and "huge" not in store  # the user still gets a result


def test_run_queue_bounds_runs_in_flight_and_serves_in_order():
    queue = RunQueue(slots=2)
    running, peak, order, places = [0], [0], [], {}
    lock = threading.Lock()
    everyone_in = threading.Event()  # the first two hold their slots until all six are in line

    def user(i: int) -> None:
        with queue.slot(on_wait=lambda place, s: places.setdefault(i, place)):
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                order.append(i)
            everyone_in.wait(10)
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    threads = []
    for i in range(6):  # each arrives once the one before is in a slot or in line
        threads.append(threading.Thread(target=user, args=(i,)))
        threads[-1].start()
        deadline = time.monotonic() + 10
        while len(order) + queue.waiting < i + 1 and time.monotonic() < deadline:
            time.sleep(0.005)
    everyone_in.set()
    for t in threads:
        t.join()
    assert peak[0] == 2
    assert order == list(range(6))
    assert places[2] == 1 and places[5] == 4  # the waiting ones were told their place
    assert queue.waiting == 0


def test_a_waiter_that_is_interrupted_leaves_the_queue():
    queue = RunQueue(slots=1)
    release = threading.Event()

    def holder():
        with queue.slot():
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    time.sleep(0.05)

    def interrupted(place, seconds):
        raise KeyboardInterrupt  # as Streamlit stops a script that is rerun

    with pytest.raises(KeyboardInterrupt):
        with queue.slot(on_wait=interrupted):
            pass
    assert queue.waiting == 0
    release.set()
    t.join()
    with queue.slot():  # the queue still works
        pass


# The subprocess: many sessions push more distinct long texts through the app than the budget
# holds. A fresh process, so nothing else in the test run holds tensors.
PUSH = r"""
import gc, json, os, sys
os.environ.update(HF_HUB_OFFLINE="1", ATTENTION_LAB_HOSTED="1", ATTENTION_LAB_MEMORY_MB="{mb}")
sys.path[:0] = [{root!r}, {root!r} + "/tests"]
import torch
from streamlit.testing.v1 import AppTest
from page_links import switch
from model.trace import Trace

def live_bytes(exclude):
    seen, total = set(), 0
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            ptr = storage.data_ptr()
            if ptr not in seen and ptr not in exclude:
                seen.add(ptr)
                total += storage.nbytes()
    return total

words = "the cat sat on a mat while dogs ran far across green fields under bright sky".split()
def text(i):
    return " ".join(words[(i * 7 + j * (i + 3)) % len(words)] for j in range(420))

sessions, results = [], []
for s in range({n_sessions}):
    at = AppTest.from_file({app!r}, default_timeout=180)
    switch(at, "attention")
    sessions.append(at)
for i in range({n_texts}):
    at = sessions[i % len(sessions)]
    at.session_state["sb_text"] = text(i)
    if i < len(sessions):
        at.run()
        at.segmented_control(key="attn_view").set_value("All heads")
        at.radio(key="attn_mode").set_value("Attention rollout")
    at.run()
    heat = [c for c in at.get("plotly_chart") if json.loads(c.proto.spec)["data"][0]["type"] == "heatmap"]
    results.append(bool(heat) and not at.exception)
# the first session asks for its first text again: long evicted, it is recomputed
first = sessions[0]
first.session_state["sb_text"] = text(0)
first.run()
results.append(not first.exception and bool(first.get("plotly_chart")))

import ui.cache
from model.trace import Trace
store = ui.cache._run_cache()
model_ptrs = set()
for name in ("minilm",):
    lm = ui.cache._load(name)
    model_ptrs |= {{p.untyped_storage().data_ptr() for p in lm.model.state_dict().values()}}
gc.collect()
traces = [o for o in gc.get_objects() if isinstance(o, Trace)]
print(json.dumps({{"results": results, "live": live_bytes(model_ptrs), "budget": store.max_bytes,
                  "kept": store.nbytes, "traces": len(traces), "entries": len(store),
                  "trace_bytes": max((t.nbytes for t in traces), default=0)}}))
"""


def test_many_sessions_of_long_texts_stay_within_the_budget_and_all_get_results():
    mb = 300  # a little more than one 420-token run with its rollout and overview
    script = PUSH.format(mb=mb, root=str(ROOT), app=str(ROOT / "app.py"), n_sessions=3,
                         n_texts=8)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=900, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(report["results"]), report  # every user got a heatmap, evicted or not
    assert report["budget"] == mb * 2**20
    assert report["kept"] <= report["budget"]
    # 9 long runs went through 3 sessions; at most what the budget holds is alive, plus small
    # things outside it (tokens, one figure's arrays): nothing else holds a run.
    assert report["trace_bytes"] > 50 * 2**20  # the texts really were long
    assert report["live"] <= report["budget"] + 16 * 2**20, report
    assert report["traces"] <= report["entries"], report
