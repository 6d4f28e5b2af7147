"""glibc's allocator and the memory of big traces: keep it between runs, give it back on demand.

A full trace of a 512-token text is ~180 MB in tensors of ~13 MB each. With glibc's defaults
(dynamic mmap threshold, trim threshold twice that) the previous trace's memory is unmapped or
trimmed as soon as it is freed, and every run page-faults ~75,000 fresh pages; fixing the mmap
threshold at its maximum (32 MiB) and the trim threshold at 1 GiB keeps it in the heap for
reuse (`keep_freed_memory`, the forward-pass speed goal in BENCHMARKS.md).

The price: memory freed by a server (an evicted cache entry, a closed session) stays in the
process, and RSS does not fall. `release_free_memory` asks glibc to hand free pages back to
the kernel (malloc_trim(0)); the app calls it after its caches evict (ui/cache.py).

What malloc_trim cannot reach: glibc gives threads their own arenas (up to 8 per core), each
a 64 MiB heap whose free top is given back only when it passes the trim threshold; malloc_trim
trims the top of the main arena alone. A Streamlit server runs every page in a new thread, so
under a class's load all 16 arenas of a 2-core machine fill, and each keeps what its last big
run left at its top: 160-660 MB (BENCHMARKS.md, "Memory under a class's load"). With one
arena, the main one, which malloc_trim does reach, that is gone (two arenas still keep up to
64 MB). Two runs at a time share its lock at no measurable cost. glibc reads the limit when
the process starts, so a server is started with MALLOC_ARENA_MAX=1 (README). `keep_freed_memory`
sets the same limit, but it runs after the server's first threads made their arenas, so it
only stops more being made; `arena_count()` tells how many there are.

The settings can be changed with ATTENTION_LAB_MALLOC: "glibc" (leave glibc's defaults), or
"mmap=32M,trim=1G,arenas=1" (any of the three). glibc's own MALLOC_MMAP_THRESHOLD_,
MALLOC_TRIM_THRESHOLD_ and MALLOC_ARENA_MAX in the environment win over both. All of this is
a no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import threading

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
SETTINGS_ENV = "ATTENTION_LAB_MALLOC"
DEFAULTS = {"mmap": 32 << 20, "trim": 1 << 30, "arenas": 1}
_OPTIONS = {"mmap": (M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_"),
            "trim": (M_TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_"),
            "arenas": (M_ARENA_MAX, "MALLOC_ARENA_MAX")}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_LOCK = threading.Lock()
_STATE = {"tuned": None, "libc": None}


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


def settings(env: dict | None = None) -> dict[str, int]:
    """The mallopt settings to apply: DEFAULTS, or what ATTENTION_LAB_MALLOC says, without
    those that glibc's own environment variables already set. Raises ValueError on nonsense."""
    env = os.environ if env is None else env
    text = env.get(SETTINGS_ENV, "").strip()
    if text.lower() == "glibc":
        chosen = {}
    elif not text:
        chosen = dict(DEFAULTS)
    else:
        chosen = {}
        for item in text.split(","):
            match = re.fullmatch(r"\s*(mmap|trim|arenas)\s*=\s*(\d+)\s*([KMG]?)\s*", item, re.I)
            if match is None:
                raise ValueError(f"{SETTINGS_ENV}: cannot read {item!r} (e.g. mmap=32M,trim=1G,"
                                 "arenas=1, or glibc)")
            chosen[match[1].lower()] = int(match[2]) * _UNITS[match[3].upper()]
    return {k: v for k, v in chosen.items() if not env.get(_OPTIONS[k][1])}


def keep_freed_memory() -> dict[str, int]:
    """Apply `settings()` once per process (see the module docstring); returns what was set."""
    with _LOCK:
        if _STATE["tuned"] is not None:
            return _STATE["tuned"]
        libc, chosen = _libc(), settings()
        _STATE["tuned"] = chosen if libc is not None else {}
        for name, value in _STATE["tuned"].items():
            libc.mallopt(_OPTIONS[name][0], value)
        return _STATE["tuned"]


def release_free_memory() -> bool:
    """Return the free pages glibc can reach to the kernel. True when it released something."""
    libc = _libc()
    if libc is None:
        return False
    with _LOCK:
        return bool(libc.malloc_trim(0))


def arena_count() -> int | None:
    """How many malloc arenas this process has (glibc's malloc_info), or None off glibc."""
    libc = _libc()
    if libc is None:
        return None
    libc.open_memstream.restype = ctypes.c_void_p
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    buffer, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buffer), ctypes.byref(size))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    text = ctypes.string_at(buffer, size.value).decode()
    libc.free(buffer)
    return text.count("<heap nr=")


def rss_bytes() -> int | None:
    """This process's resident memory now (Linux /proc/self/statm), or None elsewhere."""
    try:
        with open("/proc/self/statm", "rb") as f:
            resident = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return resident * os.sysconf("SC_PAGE_SIZE")
