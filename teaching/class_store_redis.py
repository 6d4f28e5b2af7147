"""The live class store in Redis, shared by every replica of the app.

Every change is one Lua script, so Redis runs it whole with nothing in between (a join checks
"is the class full?" and adds the member in one step; a view change adds one to the version
and sets the link together). Every key starts with the store's prefix (default
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
  c:rate:...        rate-limit counters;  <prefix>failed:<window>  unknown codes tried
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
from teaching.class_store_rejoin import REDIS_SCRIPTS, RedisRejoin

DEFAULT_PREFIX = "attention-lab:class:"
UNREACHABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)  # -> StoreDown
RATE_TTL = int(2 * cs.RATE_WINDOW)

# Shared start of every script: ARGV[1] prefix, ARGV[2] now. live(id) -> the class's hash key
# while its time is not up by the store's clock; teacher(key, ended_ok) likewise by teacher key;
# keep(key, c) gives a key the class's remaining time to live.
PRELUDE = """
local p, now = ARGV[1], tonumber(ARGV[2])
local function live(id)
  if not id then return nil end
  local c = p .. 'c:' .. id
  local e = redis.call('HGET', c, 'expires')
  if not e or tonumber(e) <= now then return nil end
  return c
end
local function teacher(key, ended_ok)
  local c = live(redis.call('GET', p .. 'teacher:' .. key))
  if c and (ended_ok or redis.call('HGET', c, 'ended') == '0') then return c end
  return nil
end
local function keep(key, c)
  local ms = redis.call('PTTL', c)
  if ms > 0 then redis.call('PEXPIRE', key, ms) end
end
local function count(key, c, limit)
  local n = redis.call('INCR', key)
  if n == 1 then
    local ms = math.min(redis.call('PTTL', c), %d)
    if ms > 0 then redis.call('PEXPIRE', key, ms) end
  end
  return n <= limit
end
""" % (RATE_TTL * 1000)

START = """
local id, code, key, expires = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local ms, limit = tonumber(ARGV[7]), tonumber(ARGV[8])
if redis.call('ZCOUNT', p .. 'live', '(' .. ARGV[2], '+inf') >= limit then return 'full' end
if live(redis.call('GET', p .. 'code:' .. code)) then return 'taken' end
local c = p .. 'c:' .. id
redis.call('HSET', c, 'code', code, 'teacher', key, 'version', 0, 'link', '', 'ended', 0,
           'expires', expires, 'joined', 0)
redis.call('PEXPIRE', c, ms)
redis.call('SET', p .. 'code:' .. code, id, 'PX', ms)
redis.call('SET', p .. 'teacher:' .. key, id, 'PX', ms)
redis.call('ZADD', p .. 'live', expires, id)
if redis.call('PTTL', p .. 'live') < ms then redis.call('PEXPIRE', p .. 'live', ms) end
return 'ok'
"""

# drop(c, m): member m gone from the class whose hash key is c. Its answers go too (the count
# of answers the class keeps goes down by as many), and the browser remembered as it.
DROP = """
local function drop(c, m)
  if not m then return end
  local b = redis.call('HGET', c .. ':rejoin-of', m)
  if b then
    local entry = p .. 'rejoin:' .. b
    if redis.call('GET', entry) == 's|' .. string.sub(c, string.len(p) + 3) .. '|' .. m then
      redis.call('DEL', entry)
      redis.call('SREM', c .. ':rejoin', b)
    end
    redis.call('HDEL', c .. ':rejoin-of', m)
  end
  for _, q in ipairs(redis.call('HKEYS', c .. ':questions')) do
    if redis.call('HDEL', c .. ':a:' .. q, m) == 1 then redis.call('HINCRBY', c, 'answers', -1) end
  end
  redis.call('HDEL', c .. ':members', m)
  redis.call('HDEL', c .. ':following', m)
  redis.call('ZREM', c .. ':seen', m)
end
"""

# ARGV[3] code ('' when not a code), [4] window, [5] failed limit, [6] 'join' or 'look',
# [7] the client's bucket, then for a join: [8] name, [9] member key, [10] members present at
# most, [11] join limit, [12] join limit per client, [13] present since, [14] rows at most.
JOIN = DROP + """
local failed = p .. 'failed:' .. ARGV[7] .. ':' .. ARGV[4]
if tonumber(redis.call('GET', failed) or '0') >= tonumber(ARGV[5]) then return {'guessing'} end
local id = ARGV[3] ~= '' and redis.call('GET', p .. 'code:' .. ARGV[3]) or nil
local c = live(id)
if not c or redis.call('HGET', c, 'ended') ~= '0' then
  redis.call('INCR', failed)
  redis.call('EXPIRE', failed, %d)
  return {'unknown'}
end
if ARGV[6] == 'look' then return {'ok', id} end
if redis.call('ZCOUNT', c .. ':seen', '(' .. ARGV[13], '+inf') >= tonumber(ARGV[10]) then
  return {'full'}
end
if redis.call('HLEN', c .. ':members') >= tonumber(ARGV[14]) then
  drop(c, redis.call('ZRANGE', c .. ':seen', 0, 0)[1])
end
if not count(c .. ':rate:joins:' .. ARGV[7] .. ':' .. ARGV[4], c, tonumber(ARGV[12]))
   or not count(c .. ':rate:joins:' .. ARGV[4], c, tonumber(ARGV[11])) then return {'rush'} end
local name, member = ARGV[8], ARGV[9]
if name == '' then name = 'Student ' .. redis.call('HINCRBY', c, 'joined', 1)
else redis.call('HINCRBY', c, 'joined', 1) end
redis.call('HSET', c .. ':members', member, name)
redis.call('HSET', c .. ':following', member, '1')
redis.call('ZADD', c .. ':seen', now, member)
for _, k in ipairs({c .. ':members', c .. ':following', c .. ':seen'}) do keep(k, c) end
return {'ok', name, id}
""" % RATE_TTL

# ARGV[3] class id, [4] member key.
LEAVE = DROP + """
local c = p .. 'c:' .. ARGV[3]
if redis.call('EXISTS', c) == 1 then drop(c, ARGV[4]) end
return 1
"""

# ARGV[3] teacher key, [4] 'id' (live classes only) or 'code' (ended ones too).
TEACHER_CLASS = """
local c = teacher(ARGV[3], ARGV[4] == 'code')
if not c then return false end
if ARGV[4] == 'code' then return redis.call('HGET', c, 'code') end
return string.sub(c, string.len(p) + 3)
"""

SET_VIEW = """
local c = teacher(ARGV[3], false)
if not c then return -1 end
redis.call('HSET', c, 'link', ARGV[4])
return redis.call('HINCRBY', c, 'version', 1)
"""

VIEW = """
local c = live(ARGV[3])
if not c then return false end
local v = redis.call('HMGET', c, 'version', 'link', 'ended')
local q = redis.call('HGETALL', c .. ':questions')
local revealed = {}
for i = 1, #q, 2 do if q[i + 1] == '1' then table.insert(revealed, q[i]) end end
return {v[1], v[2], v[3], revealed}
"""

# ARGV[3] class id, [4] member key, [5] '1'/'0' to set following, '' to leave it.
TOUCH = """
local c = live(ARGV[3])
if not c or redis.call('HEXISTS', c .. ':members', ARGV[4]) == 0 then return 0 end
redis.call('ZADD', c .. ':seen', now, ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', c .. ':following', ARGV[4], ARGV[5]) end
return 1
"""

HEADCOUNT = """
local c = teacher(ARGV[3], true)
if not c then return false end
local present = redis.call('ZRANGEBYSCORE', c .. ':seen', '(' .. ARGV[4], '+inf')
local following = 0
if #present > 0 then
  for _, f in ipairs(redis.call('HMGET', c .. ':following', unpack(present))) do
    if f == '1' then following = following + 1 end
  end
end
return {#present, following}
"""

# ARGV[3] class id, [4] member, [5] question, [6] choice, [7] window, [8] answers per window,
# [9] questions per class, [10] answers kept per class.
ANSWER = """
local c = live(ARGV[3])
if not c or redis.call('HGET', c, 'ended') ~= '0' then return 0 end
if redis.call('HEXISTS', c .. ':members', ARGV[4]) == 0 then return 0 end
local revealed = redis.call('HGET', c .. ':questions', ARGV[5])
if revealed == '1' then return 0 end
if not revealed and redis.call('HLEN', c .. ':questions') >= tonumber(ARGV[9]) then return 0 end
local given = c .. ':a:' .. ARGV[5]
local new = redis.call('HEXISTS', given, ARGV[4]) == 0
if new and tonumber(redis.call('HGET', c, 'answers') or '0') >= tonumber(ARGV[10]) then
  return 0
end
if not count(c .. ':rate:a:' .. ARGV[4] .. ':' .. ARGV[7], c, tonumber(ARGV[8])) then return 0 end
if new then redis.call('HINCRBY', c, 'answers', 1) end
if not revealed then
  redis.call('HSET', c .. ':questions', ARGV[5], '0')
  keep(c .. ':questions', c)
end
redis.call('HSET', given, ARGV[4], ARGV[6])
keep(given, c)
redis.call('ZADD', c .. ':seen', now, ARGV[4])
return 1
"""

TALLY = """
local c = teacher(ARGV[3], true)
if not c then return false end
local answers = redis.call('HGETALL', c .. ':a:' .. ARGV[4])
local out = {}
for i = 1, #answers, 2 do
  table.insert(out, answers[i + 1])
  table.insert(out, redis.call('HGET', c .. ':members', answers[i]) or '')
end
return out
"""

REVEAL = """
local c = teacher(ARGV[3], false)
if not c then return 'not_teacher' end
local q = c .. ':questions'
if redis.call('HEXISTS', q, ARGV[4]) == 0 and redis.call('HLEN', q) >= tonumber(ARGV[5]) then
  return 'too_many'
end
redis.call('HSET', q, ARGV[4], '1')
keep(q, c)
return 'ok'
"""

# ARGV[3] class id, [4] its code, [5] its teacher key (its other keys are deleted before).
DELETE = """
for _, k in ipairs({p .. 'code:' .. ARGV[4], p .. 'teacher:' .. ARGV[5]}) do
  if redis.call('GET', k) == ARGV[3] then redis.call('DEL', k) end
end
redis.call('ZREM', p .. 'live', ARGV[3])
return 1
"""

END = """
local c = teacher(ARGV[3], true)
if not c then return 0 end
redis.call('HSET', c, 'ended', 1)
return 1
"""


def _split_url(url: str) -> tuple[str, str | None]:
    """A Redis URL without our own `prefix=` query parameter, and that prefix."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((value for key, value in query if key == "prefix"), None)
    rest = urlencode([(key, value) for key, value in query if key != "prefix"])
    return urlunsplit(parts._replace(query=rest)), prefix


class RedisClassStore(RedisRejoin, cs.ClassStore):
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
                              delete=DELETE, **REDIS_SCRIPTS).items()}

    def _run(self, name: str, *args, now: float | None = None):
        now = self.clock() if now is None else now
        try:
            return self._scripts[name](args=[self.prefix, repr(now), *map(str, args)])
        except UNREACHABLE as exc:
            raise cs.StoreDown(cs.STORE_DOWN) from exc

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
