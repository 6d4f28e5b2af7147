"""A live class's "has the teacher moved?" signal: asked by the browser, answered by a light
route, so an idle class costs the server next to nothing.

The route (`SignalMiddleware`, in front of Streamlit in asgi.py's `st.App`): GET
/_class/<class id>/signal, with the member's key in the X-Class-Member header (a student) or
the teacher's token in X-Class-Teacher (keys never go in a URL, which proxies log). The
teacher key itself never reaches the browser (a projector shows the teacher's screen): the
teacher's browser gets a token this process made for it (`teacher_token`); the sticky cookie
brings its asks back to this replica, and a new session elsewhere makes one there. It touches no
Streamlit session. A student gets the class's view version, its revealed questions and whether
it ended, and counts as seen (the headcount's "seen lately", at most every SEEN_EVERY_SECONDS
per member and process); the teacher gets the headcount. 404: no such class (ended and gone,
or expired) or not its teacher; 403: no key, or not a key; 503: the store does not answer.
Reads are shared: all the students of a class asking within FRESH_SECONDS get one store read,
and a store that hangs holds at most one read per class (class_calls' pool), each request
waiting at most WAIT_SECONDS for it.

The browser side (`watch`): a small component (Streamlit components v2, no visible part) asks
the route every ASK_SECONDS and, only when what it hears differs from what the session drew
(a new version while following, a reveal, the class's end, the store lost or back), sets a
trigger: a student's whole app reruns (class_follow.before_run takes the view), a teacher's
class bar (a fragment) reruns. The teacher's headcount it redraws itself, in the bar's line.
It asks again at most every AGAIN_SECONDS while the difference stays (a rerun cut short).
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import threading
import time

import streamlit as st

from . import class_calls

ASK_SECONDS = 0.5
AGAIN_SECONDS = 4.0
FRESH_SECONDS = 0.1  # one store read answers every student of a class asking meanwhile
WAIT_SECONDS = class_calls.WAIT_SECONDS
PATH = "/_class/{class_id}/signal"
MEMBER_HEADER, TEACHER_HEADER = "X-Class-Member", "X-Class-Teacher"
SEEN_EVERY_SECONDS = 5.0  # as class_session.SEEN_EVERY_SECONDS (the store drops at 30 s)

_LOCK = threading.Lock()
_READS: dict[tuple, tuple[float, object]] = {}  # (kind, id) -> (started, future)
_SEEN: dict[tuple[str, str], float] = {}  # (class id, member key) -> last heartbeat
_SECRET = secrets.token_bytes(32)
_TEACHERS: dict[str, str] = {}  # a teacher's token -> its teacher key, in this process


def teacher_token(teacher_key: str) -> str:
    """The token a teacher's browser asks with, in place of the teacher key."""
    token = hmac.new(_SECRET, teacher_key.encode(), "sha256").hexdigest()[:32]
    with _LOCK:
        if len(_TEACHERS) > 4096:
            _TEACHERS.clear()
        _TEACHERS[token] = teacher_key
    return token


# ------------------------------------------------------------------------ the route
def _shared_read(kind: str, key: str, fn, now: float):
    """fn(key)'s future, shared by every request of this kind and key within FRESH_SECONDS;
    one on its way (a slow store) is shared however old."""
    with _LOCK:
        started, future = _READS.get((kind, key), (0.0, None))
        if future is None or (future.done() and now - started > FRESH_SECONDS):
            future = class_calls.submit(fn, key)
            _READS[(kind, key)] = (now, future)
            if len(_READS) > 4096:  # classes long gone
                for old in [k for k, (t, f) in _READS.items() if f.done() and now - t > 60]:
                    del _READS[old]
        return future


def _heartbeat(store, class_id: str, member_key: str, now: float) -> None:
    with _LOCK:
        if now - _SEEN.get((class_id, member_key), 0.0) < SEEN_EVERY_SECONDS:
            return
        _SEEN[(class_id, member_key)] = now
        if len(_SEEN) > 65536:
            _SEEN.clear()
    class_calls.submit(store.seen, class_id, member_key)  # what it raises: dropped


def _teacher_here(store, teacher_key: str, browser: str, now: float) -> None:
    """The teacher's tab is open in this browser: a reload of it leads again (as
    class_session.still_leading, at most every SEEN_EVERY_SECONDS)."""
    with _LOCK:
        if not browser or now - _SEEN.get((teacher_key, browser), 0.0) < SEEN_EVERY_SECONDS:
            return
        _SEEN[(teacher_key, browser)] = now
    class_calls.submit(store.remember_teacher, teacher_key, browser)


async def answer(class_id: str, member_key: str = "", token: str = "",
                 browser: str = "", now: float | None = None) -> tuple[int, dict]:
    """(HTTP status, JSON body) for one ask of the signal; `browser`: the asking browser's id
    (ui/sessions.browser_key), and `token` (from `teacher_token`), for the teacher. On the
    server's event loop: a read another ask started is answered without a thread."""
    from teaching.class_store import ClassNotFound, NotTeacher, open_store
    from teaching.class_store_base import is_token

    now = time.monotonic() if now is None else now
    teacher_key = ""
    if token:
        teacher_key = _TEACHERS.get(token, "")
        if not teacher_key:
            return 403, {"error": "no key"}
    if not is_token(teacher_key or member_key) or not is_token(class_id):
        return 403, {"error": "no key"}
    store = open_store()
    if teacher_key:
        _teacher_here(store, teacher_key, browser, now)
        future = _shared_read("headcount", teacher_key, store.headcount, now)
    else:
        _heartbeat(store, class_id, member_key, now)
        future = _shared_read("view", class_id, store.view, now)
    if not future.done():
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), WAIT_SECONDS)
        except asyncio.TimeoutError:
            return 503, {"lost": True}
        except Exception:  # noqa: BLE001 - the read's own failure, told below
            pass
    try:
        found = future.result()
    except (ClassNotFound, NotTeacher):
        return 404, {"ended": True}
    except Exception:  # noqa: BLE001 - StoreDown, or the store's client failing
        return 503, {"lost": True}
    if teacher_key:
        return 200, {"members": found.members, "following": found.following,
                     "looking_around": found.looking_around}
    return 200, {"version": found.version, "revealed": sorted(found.revealed),
                 "ended": found.ended}


class SignalMiddleware:
    """The route, as the outermost ASGI middleware: an ask of the signal is answered before
    Streamlit's own middleware (its session cookie signed again, gzip) and routing, which cost
    more than the answer; every other request goes on to Streamlit as it came."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        parts = path.split("/")  # (under server.baseUrlPath too: the browser asks beside
        if len(parts) < 4 or parts[-3] != "_class" or parts[-1] != "signal":  # its page)
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request
        from starlette.responses import JSONResponse

        from server.sessions import XSRF_COOKIE, browser_key

        request = Request(scope)
        status, body = 405, {"error": "GET only"}
        if request.method == "GET":
            cookie = request.cookies.get(XSRF_COOKIE)
            status, body = await answer(parts[-2],
                                        member_key=request.headers.get(MEMBER_HEADER, ""),
                                        token=request.headers.get(TEACHER_HEADER, ""),
                                        browser=browser_key(cookie) if cookie else "")
        response = JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})
        await response(scope, receive, send)


def middleware() -> list:
    """For st.App(middleware=...): user middleware runs before Streamlit's."""
    from starlette.middleware import Middleware

    return [Middleware(SignalMiddleware)]


# ------------------------------------------------------------------------ the browser
JS = r"""
const S = (window.__attentionLabClassSignal ||= {timer: null, fired: "", at: 0, busy: false});

function differs(drawn, heard) {
  if (Boolean(heard.lost) !== Boolean(drawn.lost)) return true;
  if (heard.lost) return false;
  if (heard.ended) return !drawn.ended;
  if (drawn.role === "teacher") return false;  // its headcount is redrawn here: `count`
  if (drawn.following && heard.version !== drawn.version) return true;
  return JSON.stringify(heard.revealed || []) !== JSON.stringify(drawn.revealed || []);
}

async function hear(d) {
  const base = window.location.pathname.replace(/[^/]*$/, "");
  const control = new AbortController();
  const late = setTimeout(() => control.abort(), 2500);
  try {
    const r = await fetch(base + d.path, {headers: {[d.header]: d.key}, cache: "no-store",
                                          signal: control.signal});
    if (r.status === 404)  // the class's end, or no signal here at all (not asgi.py): lost
      return (await r.json().catch(() => null))?.ended ? {ended: true} : {lost: true};
    if (r.status === 403) return null;
    return r.ok ? await r.json() : {lost: true};
  } catch (e) {
    return {lost: true};
  } finally {
    clearTimeout(late);
  }
}

// The teacher's bar line ends with the headcount (class_bar.headcount_said): the counts heard
// replace it there, so the bar is not rerun for them (a rerun of the bar as the teacher opens
// another page would be a rerun of the page left behind).
function count(heard) {
  const line = document.querySelector(
    ".st-key-class_headcount [data-testid=stMarkdownContainer] p");
  if (!line || heard.members === undefined) return;
  const said = `${heard.following} following · ${heard.looking_around} looking around · ` +
               `${heard.members} joined`;
  const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.replace(
      /\d+ following · \d+ looking around · \d+ joined/, said);
    if (text !== node.textContent) node.textContent = text;
  }
}

async function tick() {
  const d = S.data;
  if (S.busy || !d) return;
  S.busy = true;
  const heard = await hear(d);
  S.busy = false;
  if (heard && d.drawn.role === "teacher" && !heard.lost && !heard.ended) count(heard);
  if (heard === null || !differs(d.drawn, heard)) { S.fired = ""; return; }
  const said = JSON.stringify(heard), now = Date.now();
  if (said === S.fired && now - S.at < d.again * 1000) return;
  S.fired = said; S.at = now;
  S.set("heard", said);
}

export default function (component) {
  S.data = component.data;
  S.set = component.setTriggerValue;
  if (S.timer === null) S.timer = setInterval(tick, S.data.every * 1000);
  return () => { clearInterval(S.timer); S.timer = null; };
}
"""

_component = None


def _mount():
    global _component
    if _component is None:
        _component = st.components.v2.component("attention_lab_class_signal", js=JS)
    return _component


def watch(m, drawn: dict, on_heard) -> None:
    """Mount the browser's side for this member: `drawn` is what the session's screen says
    now (lost, ended; a student's following, version and revealed questions; a teacher's
    headcount), `on_heard` runs (a widget callback) when the browser heard something else."""
    teacher = m.teacher
    data = {"path": PATH.format(class_id=m.class_id).lstrip("/"),
            "header": TEACHER_HEADER if teacher else MEMBER_HEADER,
            "key": teacher_token(m.teacher_key) if teacher else m.member_key,
            "every": ASK_SECONDS, "again": AGAIN_SECONDS,
            "drawn": {"role": "teacher" if teacher else "student", **drawn}}
    with st.container(key="class_signal"):
        _mount()(key="class_signal_ear", data=data, on_heard_change=on_heard)
