"""What an idle live class costs the server: the replicas' CPU time over a while in which
nobody acts (bench/bench_class.py --idle), read from /proc (user + system, every thread);
and the bench's two small measuring helpers (a percentile, waiting for a condition)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path


def cpu_s(cluster) -> float:
    """The replicas' CPU seconds so far."""
    total = 0.0
    for replica in cluster.replicas:
        fields = Path(f"/proc/{replica.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def idle_cpu(cluster, seconds: float) -> dict | None:
    """The class idles for `seconds` (the members' browsers keep asking, or polling)."""
    if seconds <= 0:
        return None
    before, began = cpu_s(cluster), time.perf_counter()
    await asyncio.sleep(seconds)
    used, took = cpu_s(cluster) - before, time.perf_counter() - began
    return {"seconds": round(took, 1), "server_cpu_s": round(used, 2),
            "share_of_one_core": round(used / took, 4),
            "load_average": [round(x, 1) for x in os.getloadavg()]}


def pct(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if values else None


async def wait_for(check, within_s: float, poll_s: float = 0.05):
    """check() until it returns something true; that value, or None after within_s."""
    deadline = time.perf_counter() + within_s
    while time.perf_counter() < deadline:
        found = check()
        if found:
            return found
        await asyncio.sleep(poll_s)
    return None
