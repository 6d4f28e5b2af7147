"""The live class store in Redis, shared by every replica of the app.

Every change is one Lua script (teaching/class_store_redis_scripts.py), so Redis runs it whole
with nothing in between (a join checks "is the class full?" and adds the member in one step; a
view change adds one to the version and sets the link together). Every key starts with the store's prefix (default
`attention-lab:class:`, or `?prefix=...` on the URL) and carries a time to live: a class's keys
live as long as the class (rate-limit counters 20 s), so Redis itself deletes everything when
the class's hours are up, even if no replica is running then. `expire()` deletes classes whose
time is up by the store's clock straight away; until then an expired class is invisible anyway.

Keys, with `c` = `<prefix>c:<class id>`:
  <prefix>code:<CODE>, <prefix>teacher:<key>   -> class id
  c                 hash: code, teacher, version, link, ended, expires, joined
  c:members         hash member key -> name       c:following  hash member key -> 1/0
  c:seen            sorted set member key by last seen time
  c:questions       hash question -> 1 when revealed, else 0
  c:a:<question>    hash member key -> choice
  c:rejoin         set of browsers that come back to it (teaching/class_store_rejoin.py)
  c:rejoin-of       hash member key -> its browser (so a member who goes takes its entry)
  c:rate:...        rate-limit counters (joins per class, and per class and client)
  <prefix>failed:<client>:<window>  unknown codes one client tried (never all together)
  <prefix>live      sorted set of class ids by expiry time (the cap on live classes)
"""

from __future__ import annotations

import re
import time
from typing import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from teaching import class_store_base as cs
from teaching.class_codes import new_code, new_key, normalise_code
from teaching.class_store_answers import ANSWER_SCRIPTS, RedisAnswers
from teaching.class_store_redis_scripts import (ANSWER, DELETE, END, HEADCOUNT, JOIN, LEAVE,
                                                PRELUDE, REVEAL, SET_VIEW, START, TALLY,
                                                TEACHER_CLASS, TOUCH, VIEW)
from teaching.class_store_rejoin import REDIS_SCRIPTS, RedisRejoin

DEFAULT_PREFIX = "attention-lab:class:"
UNREACHABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)  # -> StoreDown
def _split_url(url: str) -> tuple[str, str | None]:
    """A Redis URL without our own `prefix=` query parameter, and that prefix."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((value for key, value in query if key == "prefix"), None)
    rest = urlencode([(key, value) for key, value in query if key != "prefix"])
    return urlunsplit(parts._replace(query=rest)), prefix


class RedisClassStore(RedisAnswers, RedisRejoin, cs.ClassStore):
    def __init__(self, url: str, clock: Callable[[], float] = time.time,
                 hours: float | None = None, prefix: str | None = None):
        super().__init__(clock, hours)
        url, url_prefix = _split_url(url)
        self.prefix = prefix or url_prefix or DEFAULT_PREFIX
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=10,
                                          socket_connect_timeout=5, health_check_interval=30)
        self._scripts = {name: self.redis.register_script(PRELUDE + body) for name, body in
                         dict(start=START, join=JOIN, teacher_class=TEACHER_CLASS,
                              set_view=SET_VIEW, view=VIEW, touch=TOUCH, headcount=HEADCOUNT,
                              answer=ANSWER, tally=TALLY, reveal=REVEAL, end=END, leave=LEAVE,
                              delete=DELETE, **REDIS_SCRIPTS, **ANSWER_SCRIPTS).items()}

    def _run(self, name: str, *args, now: float | None = None):
        now = self.clock() if now is None else now
        try:
            found = self._scripts[name](args=[self.prefix, repr(now), *map(str, args)])
        except UNREACHABLE as exc:  # down, restarting (loading its data) or paused
            raise self._lost(cs.STORE_DOWN, f"Redis: {exc}") from exc
        self._back()
        return found

    def close(self) -> None:
        self.redis.close()

    def start_class(self) -> cs.NewClass:
        now = self.clock()
        self.expire(now)  # classes whose time is up make room (one look-up when none are)
        for _ in range(50):  # a code in use is drawn again
            new = cs.NewClass(class_id=new_key(), join_code=new_code(), teacher_key=new_key())
            done = self._run("start", new.class_id, new.join_code, new.teacher_key,
                             repr(now + self.lifetime), max(1, int(self.lifetime * 1000)),
                             cs.MAX_LIVE_CLASSES, now=now)
            if done == "ok":
                return new
            if done == "full":
                break
        raise cs.Refused(cs.TOO_MANY_CLASSES)

    def _lookup(self, code: object, client: object, mode: str, *more):
        now = self.clock()
        return self._run("join", normalise_code(code) or "", cs.window(now),
                         cs.FAILED_CODES_PER_WINDOW, mode, cs.client_bucket(client), *more,
                         now=now)

    def class_by_code(self, code: str, client: str = "") -> str | None:
        found = self._lookup(code, client, "look")
        return found[1] if found[0] == "ok" else None

    def teacher_class(self, teacher_key: str) -> str | None:
        return self._run("teacher_class", teacher_key, "id") or None

    def join_code(self, teacher_key: str) -> str | None:
        return self._run("teacher_class", teacher_key, "code") or None

    def join(self, code: str, name: str = "", client: str = "") -> cs.Member:
        name, key = cs.member_name(name), new_key()
        result = self._lookup(code, client, "join", name, key, cs.MAX_MEMBERS,
                              cs.JOINS_PER_WINDOW, cs.JOINS_PER_CLIENT,
                              repr(self.clock() - cs.PRESENT_SECONDS), cs.MAX_MEMBER_ROWS)
        if result[0] == "ok":
            return cs.Member(member_key=key, name=result[1], class_id=result[2])
        raise {"guessing": cs.Refused(cs.GUESSING), "unknown": cs.ClassNotFound(cs.UNKNOWN_CODE),
               "full": cs.ClassFull(cs.FULL), "rush": cs.Refused(cs.JOIN_RUSH)}[result[0]]

    def leave(self, class_id: str, member_key: str) -> None:
        if cs.is_token(class_id) and cs.is_token(member_key):
            self._run("leave", class_id, member_key)

    def set_view(self, teacher_key: str, link: str) -> int:
        version = self._run("set_view", teacher_key, cs.check_link(link))
        if version < 0:
            raise cs.NotTeacher(cs.NOT_TEACHER)
        return int(version)

    def view(self, class_id: str) -> cs.ClassView:
        found = cs.is_token(class_id) and self._run("view", class_id)
        if not found:
            raise cs.ClassNotFound(cs.GONE)
        version, link, ended, revealed = found
        return cs.ClassView(version=int(version), link=link, revealed=frozenset(revealed),
                            ended=ended != "0")

    def set_following(self, class_id: str, member_key: str, following: bool) -> None:
        if not self._touch(class_id, member_key, "1" if following else "0"):
            raise cs.ClassNotFound(cs.NOT_A_MEMBER)

    def _touch(self, class_id: str, member_key: str, following: str) -> bool:
        return (cs.is_token(class_id) and cs.is_token(member_key)
                and bool(self._run("touch", class_id, member_key, following)))

    def seen(self, class_id: str, member_key: str) -> None:
        if not self._touch(class_id, member_key, ""):
            raise cs.ClassNotFound(cs.NOT_A_MEMBER)

    def headcount(self, teacher_key: str) -> cs.Headcount:
        now = self.clock()
        found = self._run("headcount", teacher_key, repr(now - cs.PRESENT_SECONDS), now=now)
        if not found:
            raise cs.NotTeacher(cs.NOT_TEACHER)
        members, following = map(int, found)
        return cs.Headcount(members=members, following=following,
                            looking_around=members - following)

    def answer(self, class_id: str, member_key: str, question: str, choice: str) -> bool:
        if not (cs.answer_fits(question, choice) and cs.is_token(class_id)
                and cs.is_token(member_key)):
            return False
        now = self.clock()
        return bool(self._run("answer", class_id, member_key, question, choice, cs.window(now),
                              cs.ANSWERS_PER_WINDOW, cs.MAX_QUESTIONS, cs.MAX_ANSWERS,
                              now=now))

    def tally(self, teacher_key: str, question: str, with_names: bool = False) -> cs.Tally:
        found = self._run("tally", teacher_key, question)
        if found is None:
            raise cs.NotTeacher(cs.NOT_TEACHER)
        rows = list(zip(found[::2], found[1::2]))
        return cs.make_tally(question, rows, with_names)

    def reveal(self, teacher_key: str, question: str) -> None:
        if not cs.answer_fits(question, "-"):
            raise cs.Refused(cs.BAD_QUESTION)
        done = self._run("reveal", teacher_key, question, cs.MAX_QUESTIONS)
        if done == "not_teacher":
            raise cs.NotTeacher(cs.NOT_TEACHER)
        if done == "too_many":
            raise cs.Refused(cs.TOO_MANY_QUESTIONS)

    def end_class(self, teacher_key: str) -> None:
        if not self._run("end", teacher_key):
            raise cs.NotTeacher(cs.NOT_TEACHER)

    def expire(self, now: float | None = None) -> int:
        """Delete every class whose time is up by `now` (default: the clock): all its keys."""
        now = self.clock() if now is None else now
        try:
            ids = self.redis.zrangebyscore(self.key("live"), "-inf", now)
            for class_id in ids:
                self._delete(class_id)
            return len(ids)
        except UNREACHABLE as exc:
            raise cs.StoreDown(cs.STORE_DOWN) from exc

    def _delete(self, class_id: str) -> None:
        """All of one class's keys. Its code and teacher key only while they still point to
        it (a code is free for a new class once the old one's time is up)."""
        main = self.key(f"c:{class_id}")
        code, teacher_key = self.redis.hmget(main, "code", "teacher")
        self._forget_class(class_id)  # the browsers that would come back to it
        doomed = [main, *self.redis.scan_iter(match=f"{_glob(main)}:*", count=1000)]
        for start in range(0, len(doomed), 500):  # a few hundred keys at a time
            self.redis.unlink(*doomed[start:start + 500])
        self._run("delete", class_id, code or "", teacher_key or "")

    def key(self, rest: str) -> str:
        return self.prefix + rest


def _glob(text: str) -> str:
    """`text` matched literally in a SCAN pattern."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)
