"""A teacher or a student of a live class without a browser, for bench/bench_class.py and
tests/deploy: tests/harness/ws_client.py's session, plus what a class needs of the browser.

- Fragments that rerun on their own (`st.fragment(run_every=...)`, the class bar): the server
  sends an auto_rerun message with the fragment's id and interval, and the browser then asks
  for that fragment's rerun on a timer. `start_polling` does the same, as the browser does it:
  a whole run's start clears every timer, and each timer's first tick comes one interval after
  its auto_rerun message (the same interval again keeps the running timer).
- The class bar's signal (ui/class_signal.py): a component the browser runs, which asks the
  class's route every half second and sets a trigger when what it heard differs from what the
  screen drew. `start_polling` does that too (`_ask`), with the same rule as its JavaScript.
- What the screen says: the texts of headings, markdown, alerts and code blocks as they arrive
  (`texts`, `said`), e.g. the join code, the teacher link, "Following the teacher".
- When each whole run finished (`finished`): with the texts, when a student's app has drawn
  the view the teacher opened ("Step 3 of 7" shown, then its run finished: `drawn`).
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.request
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from .ws_client import WsSession

FINISHED = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_SUCCESSFULLY")
TEXT_KINDS = ("heading", "markdown", "alert", "code", "text", "progress")
KEPT_TEXTS = 120


SIGNAL = "attention_lab_class_signal"  # ui/class_signal.py's component
_ASKS = ThreadPoolExecutor(max_workers=48, thread_name_prefix="signal")  # each browser asks


def differs(drawn: dict, heard: dict) -> bool:
    """ui/class_signal.JS's rule: does what the route said differ from what the screen drew?"""
    if bool(heard.get("lost")) != bool(drawn.get("lost")):
        return True
    if heard.get("lost"):
        return False
    if heard.get("ended"):
        return not drawn.get("ended")
    if drawn.get("role") == "teacher":  # the browser writes its headcount in: `_count`
        return False
    if drawn.get("following") and heard.get("version") != drawn.get("version"):
        return True
    return list(heard.get("revealed") or []) != list(drawn.get("revealed") or [])


class ClassClient(WsSession):
    """One browser tab of a class member: `url` is the page it opens first."""

    def __init__(self, url: str, keys: tuple = ()) -> None:
        super().__init__(url, heatmap_key="", keys=keys)
        self.texts: list[tuple[float, str, str]] = []  # (when, element kind, text)
        self.auto: dict[str, float] = {}  # fragment id -> rerun every so many seconds
        self.ticked: dict[str, float] = {}  # fragment id -> when its timer last fired (or began)
        self.finished: list[tuple[float, str]] = []  # (when, query string) per whole run
        self.started: list[float] = []  # when each run began (its new_session arrived)
        self.endings: list[tuple[float, int]] = []  # (when, how) each run ended
        self.errors: list[tuple[float, str]] = []  # (when, what) the reader could not take
        self.pages: dict[str, str] = {}  # url path -> page script hash
        self.lifecycle: list[tuple[float, str]] = []  # (when, what): runs, timers, requests
        self._poller: asyncio.Task | None = None
        self.signal: dict | None = None  # the class signal component: id, fragment, data
        self._asking: asyncio.Task | None = None
        self._fired: tuple[str, float] = ("", 0.0)  # the last trigger sent, and when

    def _error(self, text: str) -> None:
        """ws_client's, and kept for the missed-step report (a polling member has no run)."""
        super()._error(text)
        self.errors.append((time.perf_counter(), text[:120]))
        del self.errors[:-KEPT_TEXTS]

    async def _read(self) -> None:
        """ws_client's reader; keeps why the connection closed (who closed it, the code)."""
        await super()._read()
        if self.ws is not None and self.ws.close_code is not None:
            self.ws_closed = f"{self.ws_closed}: code {self.ws.close_code} {self.ws.close_reason}"

    def _note(self, what: str) -> None:
        self.lifecycle.append((time.perf_counter(), what))
        del self.lifecycle[:-KEPT_TEXTS]

    def rerun_msg(self, fragment_id: str = ""):
        self._note(f"asks {'fragment ' + fragment_id[:6] if fragment_id else 'whole run'}")
        return super().rerun_msg(fragment_id)

    def handle(self, msg: ForwardMsg, size: int = 0) -> None:
        kind = msg.WhichOneof("type")
        if kind == "auto_rerun" and msg.auto_rerun.fragment_id:
            fragment, every = msg.auto_rerun.fragment_id, max(msg.auto_rerun.interval, 0.1)
            self._note(f"timer {fragment[:6]} every {every} s")
            if self.auto.get(fragment) != every:  # a new timer: its first tick in `every` s
                self.auto[fragment], self.ticked[fragment] = every, time.perf_counter()
        elif kind == "navigation":  # the app's pages: a page link sends the page's hash
            self.pages.update({p.url_pathname: p.page_script_hash
                               for p in msg.navigation.app_pages})
        elif kind == "new_session":
            whole = not msg.metadata.run.fragment_ids
            self._note(f"starts {'whole' if whole else 'fragment'}")
            self.started.append(time.perf_counter())
            if whole:  # a whole run: the browser clears its timers
                self.auto.clear()
        elif kind == "stop_auto_rerun":  # fragments no longer drawn
            self._note(f"timers stopped {[f[:6] for f in msg.stop_auto_rerun.fragment_ids]}")
            for fragment in msg.stop_auto_rerun.fragment_ids:
                self.auto.pop(fragment, None)
        super().handle(msg, size)
        if kind == "script_finished":
            self._note(ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished))
            self.endings.append((time.perf_counter(), msg.script_finished))
            del self.endings[:-KEPT_TEXTS]
        if kind == "script_finished" and msg.script_finished == FINISHED:
            self.finished.append((time.perf_counter(), self.query_string))

    def _element(self, element, fragment_id: str, path: tuple) -> None:
        kind = element.WhichOneof("type")
        if kind in TEXT_KINDS:
            inner = getattr(element, kind)
            text = (getattr(inner, "body", "") or getattr(inner, "code_text", "")
                    or getattr(inner, "text", ""))
            self.texts.append((time.perf_counter(), kind, text))
            del self.texts[:-KEPT_TEXTS]
        if kind == "bidi_component" and element.bidi_component.component_name == SIGNAL:
            self.signal = {"id": element.bidi_component.id, "fragment": fragment_id,
                           "data": json.loads(element.bidi_component.json)}
        if kind == "radio" and "-lesson_choice_" in element.radio.id:  # a lesson's question
            wid = element.radio.id
            key = wid.split("-", 2)[2]
            old = self.widgets.get(key, {})
            self.widgets[key] = {"id": wid, "fragment": fragment_id, "radio": True,
                                 "value": old.get("value") if old.get("id") == wid else None,
                                 "options": list(element.radio.options)}
        super()._element(element, fragment_id, path)
        if kind == "button" and "lesson_check" in self.widgets \
                and element.button.id.endswith("-lesson_check"):
            self.widgets["lesson_check"]["disabled"] = element.button.disabled

    def widget_states(self) -> list[WidgetState]:
        """ws_client's states, plus a picked radio option (its words, as the browser sends)."""
        radios = {k: v for k, v in self.widgets.items() if v.get("radio")}
        for key in radios:
            del self.widgets[key]
        try:
            states = super().widget_states()
        finally:
            self.widgets.update(radios)
        states += [WidgetState(id=r["id"], string_value=r["options"][r["value"]])
                   for r in radios.values() if r["value"] is not None]
        return states

    async def answer(self, lesson: str, number: int, pick: int, timeout_s: float) -> str | None:
        """Pick option `pick` (modulo their number) of step `number`'s question and press
        "Check my answer"; the option's words, or None if there is no such question."""
        radio = self.widgets.get(f"lesson_choice_{lesson}_{number}")
        if radio is None or not radio["options"]:
            return None
        radio["value"] = pick % len(radio["options"])
        # as in the browser: picking reruns the app (which enables the button), then the click
        picked = await self._act("pick", radio["fragment"], (None, None), timeout_s)
        deadline = time.perf_counter() + timeout_s
        while self.widgets.get("lesson_check", {}).get("disabled", True):  # not drawn anew yet
            if not picked["ok"] or time.perf_counter() > deadline:
                return None
            await asyncio.sleep(0.05)
        result = await self.click("lesson_check", timeout_s)
        return radio["options"][radio["value"]] if result["ok"] else None

    def said(self, pattern: str, since: float = 0.0) -> str | None:
        """The latest text on screen (since `since`) matching a regular expression."""
        found = re.compile(pattern)
        for when, _, text in reversed(self.texts):
            if when >= since and found.search(text):
                return text
        return None

    def drawn(self, pattern: str, since: float) -> float | None:
        """When the first whole run that showed a text matching `pattern` (after `since`)
        finished: the view that text belongs to is drawn. None if not (yet)."""
        found = re.compile(pattern)
        shown = next((when for when, _, text in self.texts
                      if when >= since and found.search(text)), None)
        if shown is None:
            return None
        return next((when for when, _ in self.finished if when >= shown), None)

    def phases(self, pattern: str, since: float) -> tuple[float, float, float] | None:
        """Of the run that drew `pattern` after `since`: seconds from `since` to its start
        (the poll and the wait for the server), to the text arriving, and to its end."""
        found = re.compile(pattern)
        shown = next((when for when, _, text in self.texts
                      if when >= since and found.search(text)), None)
        done = self.drawn(pattern, since)
        began = max((t for t in self.started if since <= t <= (shown or 0.0)), default=None)
        if shown is None or done is None or began is None:
            return None
        return began - since, shown - since, done - since

    def state_said(self, since: float) -> dict:
        """Why a member may have missed a step: its last texts, runs and timers since `since`."""
        return {"texts": [t for when, _, t in self.texts[-3:]],
                "runs_started": sum(t >= since for t in self.started),
                "runs_finished": sum(t >= since for t, _ in self.finished),
                "endings": dict(Counter(ForwardMsg.ScriptFinishedStatus.Name(how)
                                        for when, how in self.endings if when >= since)),
                "errors": [t for when, t in self.errors if when >= since][:3],
                "timers": len(self.auto), "closed": self.ws_closed,
                "lifecycle": [f"{when - since:+.3f} {what}" for when, what in self.lifecycle[-40:]]}

    def address(self) -> str:
        """The path and query the browser's address bar shows now."""
        path = next((p for p, h in self.pages.items() if h == self.page_script_hash),
                    self.page_name)
        return f"/{path}?{self.query_string}" if self.query_string else f"/{path}"

    # ---- the browser's timers
    def start_polling(self) -> None:
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll())

    async def stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None

    def timer_msg(self, fragment: str):
        """A fragment's timed rerun, as the browser's timer sends it."""
        clicking, self.clicking = self.clicking, None  # a click is sent once
        request = self.rerun_msg(fragment)
        self.clicking = clicking
        request.rerun_script.is_auto_rerun = True
        return request

    async def _poll(self) -> None:
        while not self.ws_closed:
            now = time.perf_counter()
            for fragment, every in list(self.auto.items()):
                if now - self.ticked.get(fragment, 0.0) >= every:
                    self.ticked[fragment] = now
                    try:
                        await self.ws.send(self.timer_msg(fragment).SerializeToString())
                    except Exception:  # noqa: BLE001 - the connection dropped: _read says so
                        return
            signal = self.signal
            if signal and (self._asking is None or self._asking.done()) and \
                    now - self.ticked.get(SIGNAL, 0.0) >= signal["data"]["every"]:
                self.ticked[SIGNAL] = now
                self._asking = asyncio.create_task(self._ask(signal))
            await asyncio.sleep(0.05)  # the bench runs 31 of these in one process

    def _hear(self, data: dict) -> dict | None:
        """What the browser's component hears from the class's route (ui/class_signal.JS)."""
        request = urllib.request.Request(self.origin + "/" + data["path"], headers={
            data["header"]: data["key"], **self.cookie_header()})
        try:
            with urllib.request.urlopen(request, timeout=2.5) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return {"ended": True} if exc.code == 404 else None if exc.code == 403 \
                else {"lost": True}
        except OSError:
            return {"lost": True}

    def _count(self, heard: dict) -> None:
        """The teacher's bar line, its headcount as the component writes it in (read at each
        ask, as the bar was at each of its polls before)."""
        said = (f"{heard['following']} following · {heard['looking_around']} looking around · "
                f"{heard['members']} joined")
        line = self.said(r"\d+ following · \d+ looking around · \d+ joined")
        if line:
            self.texts.append((time.perf_counter(), "markdown", re.sub(
                r"\d+ following · \d+ looking around · \d+ joined", said, line)))
            del self.texts[:-KEPT_TEXTS]

    async def _ask(self, signal: dict) -> None:
        data = signal["data"]
        heard = await asyncio.get_running_loop().run_in_executor(_ASKS, self._hear, data)
        if heard and "members" in heard:
            self._count(heard)
        if heard is None or not differs(data["drawn"], heard):
            self._fired = ("", 0.0)
            return
        said, now = json.dumps(heard), time.perf_counter()
        if said == self._fired[0] and now - self._fired[1] < data["again"]:
            return
        self._fired = (said, now)
        clicking, self.clicking = self.clicking, None
        request = self.rerun_msg(signal["fragment"])
        self.clicking = clicking
        request.rerun_script.widget_states.widgets.append(WidgetState(
            id=f"$$STREAMLIT_INTERNAL_KEY_{signal['id']}__events",
            json_trigger_value=json.dumps([{"event": "heard", "value": said}])))
        try:
            await self.ws.send(request.SerializeToString())
        except Exception:  # noqa: BLE001 - the connection dropped: _read says so
            pass

    # ---- moving around as the browser does
    async def go(self, page: str, query: str, timeout_s: float) -> dict:
        """Open another page of the app in this session (a page link: no reload)."""
        self.page_script_hash = self.pages.get(page, "")
        self.page_name, self.query_string = page, query
        return await self._act("go", "", (None, None), timeout_s)

    async def close(self) -> None:
        await self.stop_polling()
        await super().close()
