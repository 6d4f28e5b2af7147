"""One memory budget for everything the server keeps between reruns: runs and what is derived
from them (rollout, figures, statistics, sweeps). No Streamlit here, so it is testable alone.

Entries are shared by every session (the same text on the same model is computed once) and
must never be mutated. At the budget the least recently used entries go first; whoever asks
for an evicted entry again gets it recomputed.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np
import torch


def _once(key, nbytes: int, seen: set) -> int:
    if key in seen:
        return 0
    seen.add(key)
    return nbytes


def sizeof(value, _seen: set | None = None) -> int:
    """Bytes held by a value's arrays and tensors (shared tensor storage counted once),
    plus strings and bytes (a figure's embedded images). Other objects count a small constant."""
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        storage = value.untyped_storage()
        return _once(("memory", storage.data_ptr()), storage.nbytes(), seen)
    if isinstance(value, np.ndarray):  # views of one buffer at different offsets count twice
        return _once(("memory", value.__array_interface__["data"][0]), value.nbytes, seen)
    if isinstance(getattr(value, "nbytes", None), int):  # a Trace measures itself
        return int(value.nbytes)
    if isinstance(value, (str, bytes, bytearray)):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sum(sizeof(v, seen) for v in value.values()) + 64 * len(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(sizeof(v, seen) for v in value) + 8 * len(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(sizeof(getattr(value, f.name), seen) for f in dataclasses.fields(value))
    to_plotly = getattr(value, "to_plotly_json", None)  # a plotly figure: its data and images
    if callable(to_plotly):
        return sizeof(to_plotly(), seen)
    return 64


class MemoryBudget:
    """Least-recently-used values bounded by entry count and by bytes (`sizeof`).

    Thread-safe. A value bigger than the whole budget is returned but not kept.
    `get_or_compute` computes a missing key once even when several threads ask for it at the
    same moment (a class often runs the same example). Values whose size can grow after they
    were stored (a Trace derives its attention scores on first read) are measured again on
    every `get`.
    """

    def __init__(self, max_entries: int, max_bytes: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries, self.max_bytes, self._clock = max_entries, max_bytes, clock
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._read: dict[Hashable, float] = {}  # key → when it was last stored or read
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Event] = {}
        self.evicted_bytes = 0  # since the memory was last handed back to the system

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(size for _, size in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key) -> bool:
        return key in self._items

    def get(self, key: Hashable):
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            self._read[key] = self._clock()
            value, size = self._items[key]
        if hasattr(value, "nbytes") and not isinstance(value, (np.ndarray, torch.Tensor)):
            self._remeasure(key, value, size)
        return value

    def put(self, key: Hashable, value, nbytes: int | None = None) -> None:
        size = sizeof(value) if nbytes is None else nbytes
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.evicted_bytes += old[1]
            if size > self.max_bytes:
                self._read.pop(key, None)
                return
            self._items[key] = (value, size)
            self._read[key] = self._clock()
            self._shrink()

    def get_or_compute(self, key: Hashable, compute: Callable[[], object]):
        """The stored value, or compute() stored under key. Concurrent callers of the same
        missing key wait for the first one instead of computing it again."""
        while True:
            value = self.get(key)
            if value is not None:
                return value
            with self._lock:
                waiting = self._computing.get(key)
                if waiting is None:
                    self._computing[key] = threading.Event()
                    break
            waiting.wait(timeout=120)
            if key not in self:  # the first caller failed, or the value was too big to keep
                with self._lock:
                    if key not in self._computing:
                        self._computing[key] = threading.Event()
                        break
        try:
            value = compute()
            self.put(key, value)
            return value
        finally:
            with self._lock:
                self._computing.pop(key).set()

    def _remeasure(self, key, value, size: int) -> None:
        now = sizeof(value)
        if now == size:
            return
        with self._lock:
            if key in self._items and self._items[key][0] is value:
                self._items[key] = (value, now)
                self._shrink(keep=key)

    def _shrink(self, keep: Hashable | None = None) -> None:
        """Evict the least recently used entries until both bounds hold (lock held). `keep`
        (a value that just grew) goes last, and only when it alone is over the budget."""
        total = sum(size for _, size in self._items.values())
        for key in [k for k in self._items if k != keep] + [keep]:
            if len(self._items) <= self.max_entries and total <= self.max_bytes:
                return
            if key in self._items:
                size = self._items.pop(key)[1]
                self._read.pop(key, None)
                total -= size
                self.evicted_bytes += size

    def drop_idle(self, seconds: float) -> int:
        """Let go of the entries nobody has stored or read for `seconds` (a class that has
        gone): whoever asks again gets them recomputed. Returns the bytes let go."""
        cutoff, freed = self._clock() - seconds, 0
        with self._lock:
            for key in [k for k in self._items if self._read.get(k, 0.0) < cutoff]:
                freed += self._items.pop(key)[1]
            self._read = {k: t for k, t in self._read.items() if k in self._items}
            self.evicted_bytes += freed
        return freed
