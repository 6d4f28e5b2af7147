"""A class member's calls to the class store never hold their screen for long.

A store that does not answer (Redis paused or restarting, an SQLite file locked) makes a call
wait up to its client's timeout (10 s). A class bar's look at the store (its signal heard
something, ui/class_signal.py) that waited that long would hold the screen, which would not
say it lost touch. So such a call runs in a small pool of threads: the look waits for it at
most WAIT_SECONDS, then says "out of touch" and leaves the call running; the next look takes
its answer once it has one (a store that answers again answers the waiting call at
once). One call of each kind per member is in flight at a time (`Membership.calls`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait

WAIT_SECONDS = 1.0
_pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="class-store")


class Pending(Exception):
    """The store has not answered this call yet (it goes on; ask again later)."""


def call(m, name: str, fn, *args, wait_s: float = WAIT_SECONDS):
    """fn(*args)'s result (or its exception), from the call of this name already in flight for
    this member, or a new one; Pending when it has not answered within `wait_s`."""
    future = m.calls.get(name)
    if future is None or (future.done() and future.exception() is not None):
        future = start(m, name, fn, *args)  # (a call that failed after its poll gave up on
    if not answered(future, wait_s):  # it is old news: asked again)
        raise Pending(name)
    del m.calls[name]
    return future.result()


def submit(fn, *args):
    """fn(*args) in the pool, kept by no member (ui/class_signal.py's shared reads)."""
    return _pool.submit(fn, *args)


def start(m, name: str, fn, *args):
    """fn(*args) in the pool, kept as this member's call of this name: its future."""
    future = m.calls[name] = _pool.submit(fn, *args)
    return future


def answered(future, wait_s: float = WAIT_SECONDS) -> bool:
    """Wait at most `wait_s` for a call: has it answered (or failed)?"""
    wait([future], timeout=wait_s)
    return future.done()


def send(m, name: str, fn, *args) -> None:
    """fn(*args) without waiting for it (a heartbeat): skipped while the last one is in flight;
    what it raised is dropped (the next read says whether the store answers)."""
    future = m.calls.get(name)
    if future is not None and not future.done():
        return
    m.calls[name] = _pool.submit(fn, *args)


def waiting(m, name: str) -> bool:
    """Is a call of this name in flight for this member?"""
    future = m.calls.get(name)
    return future is not None and not future.done()
