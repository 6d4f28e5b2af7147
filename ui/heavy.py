"""The pages' side of the working memory (server/working_memory.py): what a heavy analysis will
cost, said before the click, and its reservation while it runs, with a plain word on the page
when it has to wait, runs in smaller pieces, or cannot run at all.

Its time is said for this machine as it is now (analysis/pace.py): the load is read when the
line is drawn, and every run that ends here teaches the server's `PACE` how long its kind
really takes."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

import streamlit as st

from analysis.cost import Plan
from analysis.pace import Machine, Pace, Span, at_start, estimate, others_beside
from server.working_memory import NoRoom, megabytes, working_memory

from .time_words import span_words

PACE = Pace()  # this server's recent runs: how long each kind really took
SAMPLES = 2  # readings of the tasks running now, SAMPLE_GAP seconds apart
SAMPLE_GAP = 0.01
NICE_STEP = 1.25  # Linux gives a task 1.25× the CPU of one a nice level above it
FRESH = 2.0  # seconds a reading of the machine is reused
_LAST: list = []  # [when, Machine]: the last reading
_LAST_LOCK = threading.Lock()


def _task_states() -> Iterator[tuple[str, int, bytes, int]]:
    """(process id, thread id, state, nice) of every thread on the system (Linux's /proc)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            yield pid, int(tid), fields[0], int(fields[16])


def _grouped() -> bool:
    """Whether Linux schedules by autogroup (one group per login session)."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled", encoding="ascii") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def _group(pid: str) -> str:
    """The autogroup of a process ("" when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/autogroup", encoding="ascii") as f:
            return f.read().split()[0]
    except (OSError, IndexError):
        return ""


def _competing_now() -> tuple[float, int] | None:
    """Threads running or ready to run now besides this one, as tasks beside the run's own
    threads (`others_beside`: other scheduling groups share the CPU equally first, and within
    this process's group a thread counts by its nice level against this process's), and their
    number; None where the system does not say."""
    if not os.path.isdir("/proc/self/task"):
        return None
    me, mine = threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0)
    grouped, threads = _grouped(), _torch_threads()
    ours_group = _group("self") if grouped else ""
    equivalent, counted = 0.0, 0
    for i in range(SAMPLES):
        groups, ours, running = set(), 0.0, 0
        for pid, tid, state, nice in _task_states():
            if state != b"R" or tid == me:
                continue
            running += 1
            group = _group(pid) if grouped else ""
            if group == ours_group:
                ours += NICE_STEP ** (mine - nice)
            else:
                groups.add(group)
        equivalent += others_beside(threads, ours, len(groups))
        counted += running
        if i + 1 < SAMPLES:
            time.sleep(SAMPLE_GAP)
    return equivalent / SAMPLES, round(counted / SAMPLES)


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def machine_now() -> Machine:
    """The cores this process may use, torch's threads, and the load, read now (a reading at
    most FRESH seconds old is reused: a page's reruns need not read /proc each time)."""
    with _LAST_LOCK:
        if _LAST and time.monotonic() - _LAST[0] < FRESH:
            return _LAST[1]
    machine = _read_machine()
    with _LAST_LOCK:
        _LAST[:] = [time.monotonic(), machine]
    return machine


def _read_machine() -> Machine:
    """The load average counts every task alike; it is weighed as the tasks running now are
    (their groups and nice levels)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    now = _competing_now()
    if now is None:
        return Machine(cores, _torch_threads(), load, load)
    weighed, counted = now
    return Machine(cores, _torch_threads(), load * weighed / max(counted, 1) if counted
                   else load, weighed)


def time_span(plan: Plan, machine: Machine | None = None, pace: Pace = PACE) -> Span:
    """How long the plan's analysis should take on this machine now."""
    machine = machine or machine_now()
    return estimate(plan.seconds, machine, pace.ratios(plan.kind), not pace.seen(plan.kind))


def cost_words(plan: Plan) -> str:
    """ "about 240 MB of memory while it runs and about 20 s" """
    return (f"about {megabytes(plan.most)} of memory while it runs and "
            f"{span_words(time_span(plan))}")


@contextlib.contextmanager
def timed(plan: Plan, pace: Pace = PACE) -> Iterator[None]:
    """Time the block as one run of the plan's analysis, and teach `pace` how long it took
    against what the load alone said at its start (a run that fails teaches nothing)."""
    expected = at_start(plan.seconds, machine_now(), not pace.seen(plan.kind))
    start = time.monotonic()
    yield
    pace.record(plan.kind, expected, time.monotonic() - start)


def allowance() -> int:
    """The server's working-memory allowance in bytes (what analyses fit their chunks to)."""
    return working_memory().allowance


def refusal(plan: Plan) -> str | None:
    """Why this analysis can never run on this server (even its smallest pieces do not fit),
    or None."""
    return working_memory().too_big(plan.least)


@contextlib.contextmanager
def room_for(plan: Plan) -> Iterator[int]:
    """Reserve the plan's working memory for the block and yield the bytes granted (the
    analysis fits its chunks to them). Waiting and smaller pieces are said on the page; when
    there is no room the page says why and stops."""
    note = st.empty()

    def waiting(seconds: float, ahead: int) -> None:
        others = "another analysis" if ahead <= 1 else f"{ahead} other analyses"
        note.info(f"Waiting for memory: the server is running other people's analyses "
                  f"(next after {others}); {seconds:.0f} s so far. Yours starts by itself.")

    try:
        grant = working_memory().reserve(plan.most, plan.least, on_wait=waiting)
        with grant as held, timed(plan):
            note.empty()
            if held.shrunk:
                note.caption(f"The server is busy, so this runs in smaller pieces "
                             f"({megabytes(held.bytes)} of memory instead of "
                             f"{megabytes(held.asked)}): the same numbers, a little slower.")
            yield held.bytes
    except NoRoom as exc:
        note.warning(str(exc))
        st.stop()
