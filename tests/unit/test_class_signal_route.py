"""The live class's signal route (ui/class_signal.py), on each store backend, through a real
Starlette app with the middleware asgi.py puts in front of Streamlit: what a student's browser hears (the view's version, the
revealed questions, the class's end), the heartbeat it carries, the teacher's headcount, and
what it refuses (no key, a key in the address instead of a header, an unknown class)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from starlette.applications import Starlette

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from class_stores import clock, redis_url, store  # noqa: E402, F401  (pytest fixtures)

import teaching.class_store as class_store  # noqa: E402
from ui import class_signal  # noqa: E402


@pytest.fixture
def route(store, monkeypatch):
    """ask(class id, headers, query) -> (status, JSON body), through the app's route."""
    monkeypatch.setattr(class_store, "open_store", lambda url=None: store)
    app = Starlette(middleware=class_signal.middleware())  # nothing else: asks only

    def ask(class_id: str, headers: dict | None = None, query: str = ""):
        time.sleep(class_signal.FRESH_SECONDS + 0.05)  # a read shared with the ask before ends
        scope = {"type": "http", "method": "GET", "path": f"/_class/{class_id}/signal",
                 "raw_path": f"/_class/{class_id}/signal".encode(), "root_path": "",
                 "query_string": query.encode(), "scheme": "http", "http_version": "1.1",
                 "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5000),
                 "headers": [(k.lower().encode(), v.encode())
                             for k, v in (headers or {}).items()]}
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        asyncio.run(app(scope, receive, send))
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return status, json.loads(body)

    return ask


def _member(key: str) -> dict:
    return {class_signal.MEMBER_HEADER: key}


def test_a_student_hears_the_views_version_its_reveals_and_the_end(store, route):
    new = store.start_class()
    member = store.join(new.join_code, "Ada")
    version = store.set_view(new.teacher_key, "/attention?layer=2")
    status, heard = route(new.class_id, _member(member.member_key))
    assert status == 200 and heard == {"version": version, "revealed": [], "ended": False}
    moved = store.set_view(new.teacher_key, "/attention?layer=3")
    store.answer(new.class_id, member.member_key, "q1", "a")
    store.reveal(new.teacher_key, "q1")
    status, heard = route(new.class_id, _member(member.member_key))
    assert moved != version and heard["version"] == moved and heard["revealed"] == ["q1"]
    store.end_class(new.teacher_key)
    status, heard = route(new.class_id, _member(member.member_key))
    assert heard["ended"] is True


def test_asking_counts_the_student_as_seen_lately(store, route, clock):
    new = store.start_class()
    member = store.join(new.join_code, "Ada")
    assert store.headcount(new.teacher_key).members == 1
    clock.now += 31  # unseen for longer than the headcount counts a member
    assert store.headcount(new.teacher_key).members == 0
    assert route(new.class_id, _member(member.member_key))[0] == 200
    deadline = time.monotonic() + 5  # the heartbeat goes to the store beside the answer
    while store.headcount(new.teacher_key).members == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.headcount(new.teacher_key).members == 1


def test_the_teacher_hears_the_headcount_with_a_token_never_with_the_teacher_key(store, route):
    new = store.start_class()
    store.join(new.join_code, "Ada")
    other = store.join(new.join_code, "Bob")
    store.set_following(new.class_id, other.member_key, False)
    token = class_signal.teacher_token(new.teacher_key)
    assert new.teacher_key not in token
    status, heard = route(new.class_id, {class_signal.TEACHER_HEADER: token})
    assert status == 200 and heard == {"members": 2, "following": 1, "looking_around": 1}
    assert route(new.class_id, {class_signal.TEACHER_HEADER: new.teacher_key})[0] == 403
    # a token for a key that leads no class: no such class
    not_teacher = class_signal.teacher_token(other.member_key)
    assert route(new.class_id, {class_signal.TEACHER_HEADER: not_teacher}) == (404, {"ended": True})


def test_an_unknown_class_is_404_and_no_key_is_refused(store, route):
    new = store.start_class()
    member = store.join(new.join_code, "Ada")
    assert route("AAAAAAAAAAAAAAAAAAAAAA", _member(member.member_key)) == (404, {"ended": True})
    assert route(new.class_id)[0] == 403
    assert route(new.class_id, _member("not a key!"))[0] == 403
    # a key in the address (which proxies log) is not taken
    assert route(new.class_id, query=f"member={member.member_key}")[0] == 403
