"""What the live class store costs per call, on SQLite (one WAL file) and on Redis (a local
redis-server started here, as the tests do).

Two measures per backend:
- alone: one thread, each call N times in a row (median and p95, milliseconds);
- a class under pressure: one teacher changing the view every 0.2 s and 30 students split over
  3 processes (like 3 replicas), each student in a loop with no pause: view(), seen(),
  answer() on one of 20 questions. Latency p50/p95/p99 per call and calls per second in all,
  then a check that every student's last answer is in the tally (answers lost: must be 0).

A real student polls a few times a second at most, so the pressure run is ~20-50x a class.

    OMP_NUM_THREADS=1 python bench/bench_class_store.py [--seconds 8]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from redis_server import running_redis  # noqa: E402
from teaching.class_store import make_store  # noqa: E402

STUDENTS, PROCESSES, QUESTIONS = 30, 3, 20


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


def alone(url: str, n: int = 300) -> dict[str, tuple[float, float]]:
    ticks = iter(range(10**9))  # one second a call: no rate limit is reached, every call works
    store = make_store(url, clock=lambda: 1_800_000_000.0 + next(ticks))
    new = store.start_class()
    member = store.join(new.join_code, "Solo")
    calls = {
        "join": lambda i: store.join(new.join_code, f"s{i}") if i < 25 else None,
        "set_view": lambda i: store.set_view(new.teacher_key, f"/attention?layer={i % 6}"),
        "view": lambda i: store.view(new.class_id),
        "seen": lambda i: store.seen(new.class_id, member.member_key),
        "answer": lambda i: store.answer(new.class_id, member.member_key, f"q:{i % 9}", "A"),
        "headcount": lambda i: store.headcount(new.teacher_key),
        "tally": lambda i: store.tally(new.teacher_key, "q:1", with_names=True),
    }
    out = {}
    for name, call in calls.items():
        times = []
        for i in range(25 if name == "join" else n):
            start = time.perf_counter()
            call(i)
            times.append(time.perf_counter() - start)
        out[name] = (statistics.median(times) * 1000, _pct(times, 0.95))
    store.close()
    return out


def worst_class(url: str) -> float:
    """MB one class takes at every bound: 300 members with 40-character names, 15,000 answers
    of 100 characters over 50 questions, a view link of 8 kB (Redis: used_memory; SQLite: the
    file and its WAL after a checkpoint)."""
    from teaching.class_store_base import MAX_ANSWERS, MAX_CHOICE_CHARS, MAX_LINK_BYTES

    ticks = iter(range(10**9))
    store = make_store(url, clock=lambda: 1_800_000_000.0 + next(ticks) * 0.5)  # 2 h in all
    before = _size(store)
    new = store.start_class()
    store.set_view(new.teacher_key, "/" + "x" * (MAX_LINK_BYTES - 1))
    members = [store.join(new.join_code, f"{i:03d}" + "n" * 37) for i in range(300)]
    per_question = len(members)
    for n in range(MAX_ANSWERS):
        member = members[n % per_question]
        assert store.answer(new.class_id, member.member_key, f"lesson:{n // per_question}",
                            f"{n:05d}" + "c" * (MAX_CHOICE_CHARS - 5))
    size = _size(store) - before
    store.expire(now=2_000_000_000.0)
    store.close()
    return size / 2**20


def _size(store) -> int:
    if hasattr(store, "redis"):  # rate counters live 20 s: the fast clock here piles them up
        for key in store.redis.scan_iter(match=f"{store.prefix}*:rate:*", count=1000):
            store.redis.unlink(key)
        return int(store.redis.info("memory")["used_memory"])
    store._db().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in store.path.parent.glob(store.path.name + "*"))


def _student_process(url, class_id, keys, seconds, queue):
    store = make_store(url)
    results = []

    def loop(key):
        times = {"view": [], "seen": [], "answer": []}
        last, refused, i = {}, 0, 0
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            for name in ("view", "seen"):
                start = time.perf_counter()
                getattr(store, name)(class_id, *(() if name == "view" else (key,)))
                times[name].append(time.perf_counter() - start)
            question, choice = f"q:{i % QUESTIONS}", "ABCD"[i % 4]
            start = time.perf_counter()
            kept = store.answer(class_id, key, question, choice)
            times["answer"].append(time.perf_counter() - start)
            if kept:
                last[question] = choice
            else:
                refused += 1
            i += 1
        results.append((times, last, refused))

    threads = [threading.Thread(target=loop, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put(results)


def pressure(url: str, seconds: float) -> dict:
    store = make_store(url)
    new = store.start_class()
    members = []
    for i in range(STUDENTS):
        members.append(store.join(new.join_code, f"s{i}"))
    queue = mp.get_context("fork").Queue()
    procs = [mp.get_context("fork").Process(
        target=_student_process,
        args=(url, new.class_id, [m.member_key for m in members[p::PROCESSES]], seconds, queue))
        for p in range(PROCESSES)]
    for proc in procs:
        proc.start()
    set_view_times, stop = [], time.monotonic() + seconds
    while time.monotonic() < stop:
        start = time.perf_counter()
        store.set_view(new.teacher_key, f"/attention?t={start}")
        set_view_times.append(time.perf_counter() - start)
        time.sleep(0.2)
    results = [r for _ in procs for r in queue.get(timeout=seconds + 60)]
    for proc in procs:
        proc.join()
    times = {"set_view": set_view_times, "view": [], "seen": [], "answer": []}
    expected: dict[str, dict[str, int]] = {}
    refused = 0
    for member_times, last, member_refused in results:
        for name, values in member_times.items():
            times[name] += values
        for question, choice in last.items():
            expected.setdefault(question, {}).setdefault(choice, 0)
            expected[question][choice] += 1
        refused += member_refused
    lost = sum(abs(store.tally(new.teacher_key, q).counts.get(c, 0) - n)
               for q, counts in expected.items() for c, n in counts.items())
    calls = sum(len(v) for v in times.values())
    store.close()
    return {"calls_per_s": calls / seconds, "refused_answers": refused, "lost": lost,
            "latency": {k: (_pct(v, 0.5), _pct(v, 0.95), _pct(v, 0.99)) for k, v in times.items()}}


def report(name: str, url: str, seconds: float) -> None:
    print(f"\n## {name}")
    print("alone (ms)        median    p95")
    for call, (median, p95) in alone(url).items():
        print(f"  {call:<12} {median:9.3f} {p95:7.3f}")
    print(f"one class at every bound: {worst_class(url):.1f} MB")
    result = pressure(url, seconds)
    print(f"pressure: {STUDENTS} students in {PROCESSES} processes + a teacher, {seconds:.0f} s:"
          f" {result['calls_per_s']:,.0f} calls/s; answers refused by the rate limit "
          f"{result['refused_answers']:,}; answers lost {result['lost']}")
    print("  call (ms)        p50      p95      p99")
    for call, (p50, p95, p99) in result["latency"].items():
        print(f"  {call:<12} {p50:8.2f} {p95:8.2f} {p99:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report("SQLite (WAL, one file)", f"sqlite:///{folder}/classes.sqlite", args.seconds)
    with running_redis() as url:
        report("Redis (local redis-server)", url, args.seconds)


if __name__ == "__main__":
    main()
