"""A Streamlit session without a browser, for the load bench (bench/bench_ws_load.py).

It speaks the app's own websocket protocol (ws://HOST/_stcore/stream, binary protobuf BackMsg
up, ForwardMsg down, streamlit 1.x) the way Streamlit's frontend does:

- opening: the page's HTML, /_stcore/health and /_stcore/host-config over HTTP, then the
  websocket (subprotocol "streamlit", the page's Origin) and a rerun_script whose ClientState
  has the URL's query string, the page's name from its path and no widget states;
- after the first run: the page script hash from new_session (and navigation), the query
  string the app last wrote (page_info_changed), the widgets' ids from their elements' deltas;
- a widget change: a rerun_script with the widgets' values (a text area's string, a slider's
  [value]); a widget drawn inside a fragment reruns only that fragment (fragment_id), as the
  browser does for the attention page's sliders;
- Streamlit's message cache: big elements it has already sent come back as a ref_hash, so the
  session keeps the cacheable messages and tells the server their hashes (cached_message_hashes).

Each action is timed from the send to the script_finished ForwardMsg of that rerun, with the
time the heatmap's delta (a plotly_chart with the given key) arrived and whether its figure shows
what was asked (the text's marker in its token labels, or "layer L, head H" in its title). It
counts the busy line appearing (an alert or markdown matching a regular expression) and errors:
an exception element, an st.error box, a timeout, the connection closing. What it does not do: no
browser, so no JavaScript, no layout, no paint, no static files or media fetched.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .load_tools import squash
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

STATUS = ForwardMsg.ScriptFinishedStatus
EARLY = STATUS.Value("FINISHED_EARLY_FOR_RERUN")  # a rerun replaced it: the next one counts
COMPILE_ERROR = STATUS.Value("FINISHED_WITH_COMPILE_ERROR")
ERROR_FORMAT = 1  # Alert.Format.ERROR: st.error
WARNING_FORMAT = 2  # Alert.Format.WARNING: st.warning
MAX_CACHED = 400  # messages kept for ref_hash (the frontend also drops old ones)


@dataclass
class Run:
    """One rerun as the client saw it."""
    want: tuple = (None, None)  # (marker, title) the heatmap should show
    sent: float = field(default_factory=time.perf_counter)
    done: asyncio.Event | None = None
    status: str | None = None
    messages: int = 0
    bytes: int = 0
    heatmap_ms: float | None = None  # when the heatmap's delta arrived
    shows: bool = False  # ... and its figure showed `want`
    busy: int = 0
    busy_text: str | None = None
    note_text: str | None = None  # the last st.warning of the run: a message to the user
    errors: int = 0
    error_text: str | None = None
    closed: str | None = None


def figure_shows(spec: str, want: tuple) -> bool:
    """Whether a plotly figure (JSON) shows `want`: the marker in its first trace's x labels
    (squashed and joined, as the browser harness matches them), the title in its title."""
    marker, title = want
    try:
        fig = json.loads(spec)
    except ValueError:
        return False
    if marker:
        x = (fig.get("data") or [{}])[0].get("x") or []
        labels = "".join(squash(re.sub(r"^\d+\u00b7", "", str(v))) for v in x)
        if marker not in labels:
            return False
    if title:
        text = (fig.get("layout", {}).get("title") or {}).get("text", "")
        return title in str(text).lower()
    return True


class WsSession:
    """One simulated user of one page. `url` is the page's full URL (http://host:port/path?q)."""

    def __init__(self, url: str, heatmap_key: str = "attn_heatmap", busy_pattern: str = "busy",
                 keys: tuple = ("sb_text", "attn_layer", "attn_head")) -> None:
        parts = urlsplit(url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.page_url, self.query_string = url, parts.query
        self.page_name = parts.path.strip("/")
        self.page_script_hash = ""
        self.heatmap_key, self.busy = heatmap_key, re.compile(busy_pattern, re.I)
        self.keys = keys
        self.widgets: dict[str, dict] = {}  # user key -> id, fragment, value, max
        self.cache: dict[str, ForwardMsg] = {}
        self.run: Run | None = None
        self.busy_paths: set[tuple] = set()
        self.error_paths: set[tuple] = set()
        self.ws = None
        self.clicking: str | None = None  # the button key of the rerun being sent
        self._reader: asyncio.Task | None = None
        self.cookies: dict[str, str] = {}

    # ---- messages up ----
    def widget_states(self) -> list[WidgetState]:
        states = []
        for key, info in self.widgets.items():
            state = WidgetState(id=info["id"])
            if info.get("button"):  # a button is sent only in the rerun that clicks it
                if key != self.clicking:
                    continue
                state.trigger_value = True
            elif isinstance(info["value"], str):
                state.string_value = info["value"]
            else:
                state.double_array_value.data[:] = [float(info["value"])]
            states.append(state)
        return states

    def rerun_msg(self, fragment_id: str = "") -> BackMsg:
        """rerun_script as the frontend sends it: before the first run the page is named by its
        URL path; after it, by the script hash the server gave."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string
        if self.page_script_hash:
            cs.page_script_hash = self.page_script_hash
        else:
            cs.page_name = self.page_name
        cs.widget_states.widgets.extend(self.widget_states())
        cs.fragment_id = fragment_id
        cs.cached_message_hashes.extend(self.cache)
        info = cs.context_info
        info.timezone, info.timezone_offset, info.locale = "UTC", 0, "en-US"
        info.url, info.is_embedded, info.color_scheme = self.page_url, False, "light"
        return msg

    # ---- messages down ----
    def handle(self, msg: ForwardMsg, size: int = 0) -> None:
        """Take one ForwardMsg: remember what later reruns need, tally it in the current run."""
        if msg.HasField("ref_hash"):
            cached = self.cache.get(msg.ref_hash)
            if cached is None:
                self._error(f"ref_hash {msg.ref_hash} not in the cache")
                return
            resolved = ForwardMsg()
            resolved.CopyFrom(cached)
            resolved.metadata.CopyFrom(msg.metadata)
            msg = resolved
        elif msg.metadata.cacheable and msg.hash:
            self.cache[msg.hash] = msg
            while len(self.cache) > MAX_CACHED:
                self.cache.pop(next(iter(self.cache)))
        run = self.run
        if run is not None:
            run.messages += 1
            run.bytes += size
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.page_script_hash = msg.new_session.page_script_hash or self.page_script_hash
        elif kind == "navigation" and msg.navigation.page_script_hash:
            self.page_script_hash = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._element(msg.delta.new_element, msg.delta.fragment_id,
                          tuple(msg.metadata.delta_path))
        elif kind == "script_finished" and msg.script_finished != EARLY and run is not None:
            run.status = STATUS.Name(msg.script_finished)
            if msg.script_finished == COMPILE_ERROR:
                self._error("compile error")
            if run.done is not None:
                run.done.set()

    def _element(self, element, fragment_id: str, path: tuple) -> None:
        kind = element.WhichOneof("type")
        inner = getattr(element, kind) if kind else None
        wid = getattr(inner, "id", "") if kind else ""
        for key in self.keys:  # keyed widgets' ids end in "-<key>"
            if wid.endswith("-" + key) and kind == "button":
                self.widgets[key] = {"id": wid, "fragment": fragment_id, "value": None,
                                     "button": True, "max": 0}
            elif wid.endswith("-" + key) and kind in ("text_area", "slider", "text_input"):
                old = self.widgets.get(key, {})
                if inner.set_value:  # the server set it (session state): the browser takes it
                    value = inner.value[0] if kind == "slider" else inner.value
                elif old.get("id") == wid:  # drawn again: the browser keeps what it has
                    value = old["value"]
                else:
                    value = (inner.default[0] if inner.default else 0) if kind == "slider" \
                        else inner.default
                self.widgets[key] = {"id": wid, "fragment": fragment_id, "value": value,
                                     "max": getattr(inner, "max", 0)}
        run = self.run
        text = (inner.body if kind in ("alert", "markdown") else "") or ""
        if kind == "alert" and self.busy.search(text):
            if path not in self.busy_paths and run is not None:
                run.busy += 1
                run.busy_text = text[:200]
            self.busy_paths.add(path)
        else:
            self.busy_paths.discard(path)
            if kind == "alert" and inner.format == WARNING_FORMAT and run is not None:
                run.note_text = text[:300]  # e.g. the server is short of memory
        if kind == "exception" or (kind == "alert" and inner.format == ERROR_FORMAT):
            if path not in self.error_paths:
                self._error(f"{inner.type}: {inner.message}" if kind == "exception" else text)
            self.error_paths.add(path)
        else:
            self.error_paths.discard(path)
        if kind == "plotly_chart" and wid.endswith("-" + self.heatmap_key) and run is not None:
            run.heatmap_ms = (time.perf_counter() - run.sent) * 1000
            run.shows = figure_shows(inner.spec, run.want)

    def _error(self, text: str) -> None:
        if self.run is not None:
            self.run.errors += 1
            self.run.error_text = self.run.error_text or text[:300]

    # ---- the connection ----
    async def _read(self) -> None:
        try:
            async for data in self.ws:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self.handle(msg, len(data))
        except Exception as exc:  # noqa: BLE001 - a dropped connection ends the session
            reason = type(exc).__name__
        else:
            reason = "ConnectionClosed"
        if self.run is not None:
            self.run.closed = reason
            if self.run.done is not None:
                self.run.done.set()
        self.ws_closed = reason

    # ---- cookies: a load balancer's sticky cookie comes back on every request, as in a browser
    def cookie_header(self) -> dict:
        jar = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return {"Cookie": jar} if jar else {}

    def get(self, url: str, timeout_s: float) -> bytes:
        """GET with this session's cookies; keeps the cookies the answer sets (name=value)."""
        request = urllib.request.Request(url, headers=self.cookie_header())
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            for line in answer.headers.get_all("Set-Cookie") or []:
                name, _, value = line.split(";", 1)[0].partition("=")
                self.cookies[name.strip()] = value.strip()
            return answer.read()

    async def open(self, timeout_s: float) -> dict:
        """Load the page as the browser does (HTML, health, host config, websocket, first
        run); timed from the first request to the first script_finished."""
        from websockets.asyncio.client import connect

        start = time.perf_counter()
        self.ws_closed = None

        def http() -> None:
            for path in (self.page_url, self.origin + "/_stcore/health",
                         self.origin + "/_stcore/host-config"):
                self.get(path, timeout_s)

        try:
            await asyncio.wait_for(asyncio.to_thread(http), timeout_s)
            ws_url = "ws" + self.origin[4:] + "/_stcore/stream"
            self.ws = await connect(ws_url, subprotocols=["streamlit"], origin=self.origin,
                                    max_size=None, ping_interval=None,
                                    open_timeout=timeout_s,
                                    additional_headers=self.cookie_header())
            self._reader = asyncio.create_task(self._read())
        except Exception as exc:  # noqa: BLE001 - a refused or slow page is one error
            return {"kind": "open", "ok": False, "ms": (time.perf_counter() - start) * 1000,
                    "error": type(exc).__name__, "busy": 0, "error_boxes": 0}
        return await self._act("open", "", (None, None), timeout_s, start)

    async def _act(self, kind: str, fragment_id: str, want: tuple, timeout_s: float,
                   start: float | None = None) -> dict:
        run = self.run = Run(want=want, done=asyncio.Event())
        self.busy_paths.clear()  # each run sends its elements again: count what each brings
        self.error_paths.clear()
        if start is not None:
            run.sent = start
        error = None
        try:
            if self.ws_closed:
                raise ConnectionError(self.ws_closed)
            await self.ws.send(self.rerun_msg(fragment_id).SerializeToString())
            await asyncio.wait_for(run.done.wait(), timeout_s)
            if run.closed:
                error = run.closed
            elif self.heatmap_key and run.heatmap_ms is None:  # heatmap_key "": any page
                error = "NoHeatmap"
            elif self.heatmap_key and not run.shows:
                error = "HeatmapNotUpdated"
        except Exception as exc:  # noqa: BLE001 - a timeout or a send on a closed socket
            error = type(exc).__name__
        ms = (time.perf_counter() - run.sent) * 1000
        result = {"kind": kind, "ok": error is None, "ms": ms, "driver_ms": ms,
                  "heatmap_ms": run.heatmap_ms, "status": run.status,
                  "messages": run.messages, "kb": round(run.bytes / 1024, 1),
                  "busy": run.busy, "error_boxes": run.errors}
        if error:
            result["error"] = error
        if run.busy:
            result["busy_text"] = run.busy_text
        if run.errors:
            result["error_text"] = run.error_text
        if run.note_text:
            result["note_text"] = run.note_text
        return result

    async def set_text(self, text: str, marker: str, timeout_s: float) -> dict:
        """Type a new text into the sidebar's text area and submit it (a full rerun)."""
        box = self.widgets.get(self.keys[0])
        if box is None:
            return {"kind": "type", "ok": False, "ms": 0.0, "error": "NoTextArea",
                    "busy": 0, "error_boxes": 0}
        box["value"] = text
        return await self._act("type", box["fragment"], (marker, None), timeout_s)

    async def move_slider(self, pos: dict, which: str, timeout_s: float) -> dict:
        """Move slider `which` ("layer" or "head") one step right, back to 0 from its end
        (the browser harness's ArrowRight / Home), and rerun its fragment."""
        keys = dict(zip(("layer", "head"), self.keys[1:]))
        slider = self.widgets.get(keys[which])
        if slider is None:
            return {"kind": "slider", "ok": False, "ms": 0.0, "error": "NoSlider",
                    "busy": 0, "error_boxes": 0}
        pos[which] = (pos[which] + 1) % (int(slider["max"]) + 1)
        slider["value"] = pos[which]
        title = f"layer {pos['layer']}, head {pos['head']}"
        return await self._act("slider", slider["fragment"], (None, title), timeout_s)

    async def click(self, key: str, timeout_s: float, want: tuple = (None, None)) -> dict:
        """Press the button keyed `key` (a rerun with its trigger set) and wait for the run."""
        button = self.widgets.get(key)
        if button is None:
            return {"kind": "click", "ok": False, "ms": 0.0, "error": "NoButton",
                    "busy": 0, "error_boxes": 0}
        self.clicking = key
        try:
            return await self._act("click", button["fragment"], want, timeout_s)
        finally:
            self.clicking = None

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
