"""glibc's allocator and the memory of big traces: keep it between runs, give it back on demand.

A full trace of a 512-token text is ~180 MB in tensors of ~13 MB each. With glibc's defaults
(dynamic mmap threshold, trim threshold twice that) the previous trace's memory is unmapped or
trimmed as soon as it is freed, and every run page-faults ~75,000 fresh pages; fixing the mmap
threshold at its maximum (32 MiB) and the trim threshold at 1 GiB keeps it in the heap for
reuse (`keep_freed_memory`, the forward-pass speed goal in BENCHMARKS.md).

The price: memory freed by a server (an evicted cache entry, a closed session) stays in the
process, in whichever per-thread arena held it, and RSS does not fall. `release_free_memory`
asks glibc to hand every arena's free pages back to the kernel (malloc_trim(0)); the app calls
it after its caches evict (ui/cache.py). Both are no-ops where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import sys
import threading

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
_LOCK = threading.Lock()
_STATE = {"tuned": False, "libc": None}


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    if _STATE["libc"] is None:
        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.malloc_trim  # noqa: B018 (glibc only: musl has no malloc_trim)
            _STATE["libc"] = libc
        except (OSError, AttributeError):
            _STATE["libc"] = False
    return _STATE["libc"] or None


def keep_freed_memory() -> None:
    """Keep freed tensor memory in the heap for the next run (see the module docstring)."""
    with _LOCK:
        if _STATE["tuned"]:
            return
        _STATE["tuned"] = True
        libc = _libc()
        if libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
            libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)


def release_free_memory() -> bool:
    """Return every arena's free pages to the kernel. True when glibc released something."""
    libc = _libc()
    if libc is None:
        return False
    with _LOCK:
        return bool(libc.malloc_trim(0))
