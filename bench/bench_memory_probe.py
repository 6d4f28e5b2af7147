"""What holds a running app server's memory (issue 18): a probe inside the server process.

`serve` runs `streamlit run app.py ...` in this process with one extra daemon thread that
answers requests dropped in a directory (--dir): for "stats" (nothing changed first), "gc"
(gc.collect() first), "trim" (malloc_trim(0) first) or "gc+trim" it writes a JSON breakdown:

- the kernel's view: VmRSS split into anonymous and file-backed pages (/proc/self/status), and
  anonymous RSS by where it lives (/proc/self/smaps): glibc's main arena (`[heap]`), 64 MiB
  aligned mappings (the heaps of glibc's per-thread arenas), other anonymous mappings (big
  mmapped blocks, Python's object arenas, thread stacks), shared libraries by file;
- glibc's view: mallinfo2 (in use, free, mmapped) and malloc_info per arena (size, free in bins);
- Python's view: objects by type, live torch tensors (storage bytes, counted once), numpy
  arrays reachable from Python objects, traces and plotly figures alive, the app's memory
  budget (server/budget.MemoryBudget: entries, counted bytes, bytes measured again now);
- Streamlit's view: sessions connected and stored, and the runtime's own cache statistics.

    python bench/bench_memory_probe.py serve --dir /tmp/probe -- --server.port 8610 ...
    python bench/bench_memory_probe.py ask --dir /tmp/probe stats

bench/bench_load.py --probe DIR serves through this and asks at each phase of a run.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAP_MAX = 64 << 20  # glibc: a per-thread arena grows in heaps of at most 64 MiB, so aligned
MB = 1 / 2**20


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                "usmblks", "fsmblks", "uordblks", "fordblks",
                                                "keepcost")]


def _libc():
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _Mallinfo2
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    return libc


def kernel_view() -> dict:
    """VmRSS and its parts, and anonymous RSS by kind of mapping, in MB."""
    status = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads"):
            status[key] = int(value.split()[0]) / (1 if key == "Threads" else 1024)
    kinds, files, arena_maps = Counter(), Counter(), 0
    kind = path = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and not head[0].endswith(":"):
            start, end = (int(x, 16) for x in head[0].split("-"))
            path = head[5] if len(head) > 5 else ""
            if path == "[heap]":
                kind = "main arena [heap]"
            elif path.startswith("["):
                kind = "other " + path
            elif path:
                kind = "files"
            elif start % HEAP_MAX == 0 and end - start <= HEAP_MAX:
                kind, arena_maps = "thread arenas (64 MiB-aligned)", arena_maps + 1
            else:
                kind = "other anonymous"
        elif head[0] == "Rss:":
            kinds[kind] += int(head[1]) / 1024
            if kind == "files":
                files[Path(path).name] += int(head[1]) / 1024
    return {"status_mb": status, "rss_by_kind_mb": dict(kinds), "arena_mappings": arena_maps,
            "files_top_mb": dict(files.most_common(8))}


def glibc_view(libc) -> dict:
    info = libc.mallinfo2()
    path = f"/tmp/malloc_info_{id(info)}.xml"
    handle = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, handle)
    libc.fclose(handle)
    arenas = []
    for heap in ET.parse(path).getroot().findall("heap"):
        free = sum(int(t.get("size")) for t in heap.findall("total"))
        size = next(int(s.get("size")) for s in heap.findall("system") if s.get("type") == "current")
        arenas.append({"nr": int(heap.get("nr")), "size_mb": size * MB, "free_in_bins_mb": free * MB})
    Path(path).unlink()
    return {"in_use_mb": info.uordblks * MB, "free_mb": info.fordblks * MB,
            "mmapped_mb": info.hblkhd * MB, "mmapped_blocks": info.hblks,
            "arena_mb": info.arena * MB, "main_top_releasable_mb": info.keepcost * MB,
            "arenas": arenas}


def python_view() -> dict:
    """(Importing torch here, in the probe's thread, would put its memory in another arena.)"""
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if np is None or torch is None or "server.budget" not in sys.modules:
        return {"objects": len(gc.get_objects()), "note": "the app has not run yet"}

    objects = gc.get_objects()
    types = Counter(type(o).__name__ for o in objects)
    storages, arrays, budgets = {}, {}, []
    for obj in objects:
        if isinstance(obj, torch.Tensor):
            with_storage = obj.untyped_storage()
            storages[with_storage.data_ptr()] = with_storage.nbytes()
        elif type(obj).__name__ in ("MemoryBudget", "RunQueue"):
            budgets.append(obj)
        for ref in gc.get_referents(obj):
            if isinstance(ref, np.ndarray):
                base = ref if ref.base is None else ref.base
                arrays[id(base)] = getattr(base, "nbytes", 0)
    result = {"objects": len(objects), "top_types": dict(types.most_common(12)),
              "tensors_mb": sum(storages.values()) * MB, "tensor_storages": len(storages),
              "numpy_mb": sum(arrays.values()) * MB, "numpy_arrays": len(arrays),
              "traces": types.get("Trace", 0), "figures": types.get("Figure", 0),
              "allocated_blocks": sys.getallocatedblocks()}
    del objects
    sizeof = sys.modules["server.budget"].sizeof

    queues = [q for q in budgets if type(q).__name__ == "RunQueue"]
    budgets = [b for b in budgets if type(b).__name__ == "MemoryBudget"]
    result["budgets"] = [{"entries": len(b), "counted_mb": b.nbytes * MB,
                          "measured_now_mb": sum(sizeof(v) for v, _ in list(b._items.values())) * MB,
                          "limit_mb": b.max_bytes * MB} for b in budgets]
    result["queues"] = [{"holds_s": list(getattr(q, "holds", [])),
                         "waits": [list(w) for w in getattr(q, "waits", [])]} for q in queues]
    return result


def streamlit_view() -> dict:
    from streamlit import runtime

    if not runtime.exists():
        return {}
    rt = runtime.get_instance()
    manager = rt._session_mgr
    stats = Counter()
    for family, entries in rt.stats_mgr.get_stats().items():
        for stat in entries:
            size = getattr(stat, "byte_length", None)
            if size is not None:
                stats[f"{family}:{getattr(stat, 'category_name', '')}"] += size * MB
    return {"active_sessions": len(manager.list_active_sessions()),
            "stored_sessions": len(manager.list_sessions()), "runtime_caches_mb": dict(stats)}


def snapshot(command: str, libc) -> dict:
    took = {}
    if "gc" in command:
        start = time.perf_counter()
        took["gc_collected"] = gc.collect()
        took["gc_s"] = time.perf_counter() - start
    if "trim" in command:
        took["trimmed"] = libc.malloc_trim(0)
    out = {"command": command, "t": time.time(), **took, "kernel": kernel_view(),
           "glibc": glibc_view(libc)}
    for name, view in (("python", python_view), ("streamlit", streamlit_view)):
        try:
            out[name] = view()
        except Exception as exc:  # noqa: BLE001 - a probe must not take the server down
            out[name] = {"error": repr(exc)}
    out["kernel_after"] = kernel_view()["status_mb"]  # the probe's own objects are counted here
    return out


def _answer_forever(folder: Path) -> None:
    libc = _libc()
    while True:
        for request in sorted(folder.glob("*.cmd")):
            command = request.read_text().strip()
            reply = request.with_suffix(".json")
            try:
                result = snapshot(command, libc)
            except Exception as exc:  # noqa: BLE001
                result = {"command": command, "error": repr(exc)}
            tmp = reply.with_suffix(".part")
            tmp.write_text(json.dumps(result, indent=1, default=str))
            tmp.rename(reply)
            request.unlink()
        time.sleep(0.2)


def serve(folder: Path, streamlit_args: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    threading.Thread(target=_answer_forever, args=(folder,), name="memory-probe",
                     daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *streamlit_args]
    cli.main()


def ask(folder: Path, command: str, name: str | None = None, timeout_s: float = 120.0) -> dict:
    """Ask the probe serving from `folder`; returns its JSON answer (also kept as NAME.json)."""
    name = name or f"{command}-{time.time():.0f}"
    request = folder / f"{name}.cmd"
    request.write_text(command)
    reply, deadline = folder / f"{name}.json", time.monotonic() + timeout_s
    while not reply.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the memory probe did not answer {command!r}")
        time.sleep(0.2)
    return json.loads(reply.read_text())


def brief(snap: dict) -> dict:
    """The few numbers of a snapshot that a table needs, in MB."""
    k, g, p = snap["kernel"], snap["glibc"], snap.get("python", {})
    kinds = k["rss_by_kind_mb"]
    return {"rss": k["status_mb"]["VmRSS"], "anon": k["status_mb"]["RssAnon"],
            "file": k["status_mb"]["RssFile"], "heap": kinds.get("main arena [heap]", 0),
            "thread_arenas": kinds.get("thread arenas (64 MiB-aligned)", 0),
            "other_anon": kinds.get("other anonymous", 0), "arenas": len(g["arenas"]),
            "malloc_in_use": g["in_use_mb"], "malloc_free": g["free_mb"],
            "mmapped": g["mmapped_mb"], "tensors": p.get("tensors_mb"),
            "numpy": p.get("numpy_mb"), "traces": p.get("traces"),
            "budget": sum(b["counted_mb"] for b in p.get("budgets", [])),
            "budget_now": sum(b["measured_now_mb"] for b in p.get("budgets", [])),
            "sessions": snap.get("streamlit", {}).get("stored_sessions")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["serve", "ask"])
    parser.add_argument("--dir", type=Path, required=True)
    args, rest = parser.parse_known_args()  # ask: stats, gc, trim or gc+trim; serve: the
    rest = [a for a in rest if a != "--"]  # arguments of `streamlit run app.py` after --
    if args.action == "serve":
        serve(args.dir, rest)
    else:
        print(json.dumps(ask(args.dir, rest[0] if rest else "stats"), indent=1))


if __name__ == "__main__":
    main()
