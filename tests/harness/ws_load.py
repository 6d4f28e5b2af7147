"""One protocol-level session of the load bench (bench/bench_ws_load.py, and the hostile mix's
long sessions): it opens the page, waits for every session at a barrier, then submits distinct
texts and moves the sliders until the run's deadline."""

from __future__ import annotations

import asyncio
import contextlib
import time

from .load_tools import RssRecorder, session_text
from .ws_client import WsSession


def start_clock(clock: dict, args, rec: RssRecorder) -> None:
    """The first session through the barrier starts the run (as bench_load's sessions do)."""
    if "deadline" not in clock:
        clock["run_start_mb"] = rec.mark("run")
        clock["start"] = time.perf_counter()
        clock["deadline"] = clock["start"] + args.duration


async def ws_session(url: str, index: int, args, out: list[dict], all_open: asyncio.Barrier,
                     clock: dict, rec: RssRecorder) -> None:
    """One protocol-level session: open, then texts and slider moves until the deadline."""
    session = WsSession(url, heatmap_key=args.heatmap_key, busy_pattern=args.busy_pattern)

    def keep(result: dict, cycle: int) -> dict:
        out.append({"session": index, "browser": "", "client": "ws", "cycle": cycle,
                    "t_s": round(time.perf_counter() - rec.t0, 2), **result})
        return result

    try:
        opened = keep(await session.open(args.open_timeout), 0)["ok"]
        await all_open.wait()
        start_clock(clock, args, rec)
        pos = {"layer": 0, "head": 0}
        for which, key in (("layer", "attn_layer"), ("head", "attn_head")):
            with contextlib.suppress(KeyError, TypeError, ValueError):
                pos[which] = int(session.widgets[key]["value"])
        cycle, fails = 0, 0 if opened else args.max_fails
        while time.perf_counter() < clock["deadline"] and fails < args.max_fails:
            cycle += 1
            text, marker = session_text(args.seed, index, cycle, args.chars, args.mode == "long")
            ok = keep(await session.set_text(text, marker, args.timeout), cycle)["ok"]
            fails = 0 if ok else fails + 1
            for move in range(args.moves):
                if time.perf_counter() >= clock["deadline"] or fails >= args.max_fails:
                    break
                which = "layer" if move % 3 == 2 else "head"
                ok = keep(await session.move_slider(pos, which, args.timeout), cycle)["ok"]
                fails = 0 if ok else fails + 1
            if session.ws_closed:  # the connection dropped: this student is gone
                break
            if args.think:
                await asyncio.sleep(args.think)
        if fails >= args.max_fails or session.ws_closed:
            clock.setdefault("stopped", []).append(index)
    finally:
        with contextlib.suppress(Exception):
            await session.close()
