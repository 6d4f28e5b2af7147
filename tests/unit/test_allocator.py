"""glibc's tuning (model/allocator.py): its settings, and memory freed in many threads going
back to the system (issue 18: RSS stayed ~300 MB above the budget after a class left)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from model import allocator

ROOT = Path(__file__).resolve().parents[2]
glibc_only = pytest.mark.skipif(allocator._libc() is None, reason="glibc's malloc only")


def test_settings_default_can_be_changed_and_glibc_environment_wins():
    assert allocator.settings({}) == allocator.DEFAULTS
    assert allocator.DEFAULTS["arenas"] == 1
    assert allocator.settings({"ATTENTION_LAB_MALLOC": "glibc"}) == {}
    assert allocator.settings({"ATTENTION_LAB_MALLOC": "mmap=4M, trim=512K,arenas=1"}) == {
        "mmap": 4 << 20, "trim": 512 << 10, "arenas": 1}
    assert allocator.settings({"MALLOC_ARENA_MAX": "4"}) == {
        k: v for k, v in allocator.DEFAULTS.items() if k != "arenas"}
    with pytest.raises(ValueError, match="ATTENTION_LAB_MALLOC"):
        allocator.settings({"ATTENTION_LAB_MALLOC": "mmap=lots"})


# A fresh process as a server is: the app's tuning first, then pages in ever new threads that
# each allocate and free big blocks (a run's tensors), two at a time.
THREADS = r"""
import json, sys, threading
sys.path.insert(0, {root!r})
import torch
from model.allocator import arena_count, keep_freed_memory, release_free_memory

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

keep_freed_memory()
base = rss_mb()
def page():
    blocks = [torch.ones(2 << 20) for _ in range(10)]  # 10 blocks of 8 MB, touched
    del blocks
for _ in range(6):
    pair = [threading.Thread(target=page) for _ in range(2)]
    [t.start() for t in pair]
    [t.join() for t in pair]
release_free_memory()
print(json.dumps({{"held_mb": rss_mb() - base, "arenas": arena_count()}}))
"""


@glibc_only
def test_memory_freed_in_many_threads_goes_back_to_the_system():
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_ARENA_MAX", "ATTENTION_LAB_MALLOC")}
    out = subprocess.run([sys.executable, "-c", THREADS.format(root=str(ROOT))], env=env,
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    # 12 threads each touched 80 MB. With an arena per thread (the old tuning: 7 arenas here)
    # each arena's free top stays resident after malloc_trim: 130-180 MB held. In the one
    # main arena malloc_trim reaches it all.
    assert report["arenas"] <= allocator.DEFAULTS["arenas"], report
    assert report["held_mb"] < 16, report
