"""Rejoin for both class store backends (teaching/class_store_base.Rejoin): which class a
browser is in, so that a new session of the same browser, on any replica, comes back to it.

A browser is kept only as a hash of its id (class_store_base.browser_hash). A student's entry
holds the member key it already had (recall adds the member's name and whether it was following,
both read from the member itself); a teacher's entry holds no key at all: recall reads the
teacher key from the class itself, and only for the browser that was remembered as the
teacher's. Entries go with their class (SQLite: the class's rows; Redis: the class's time to
live, and expire()).

A teacher's entry also holds when its teacher tab was last seen (remember_teacher, again every
few seconds from the teacher's session). A reload or a reconnect finds it fresh and leads
again; a browser that comes back after TEACHER_AWAY_SECONDS without it (a shared computer the
teacher walked away from) finds it dropped and is in no class: only the teacher link leads.
"""

from __future__ import annotations

from teaching import class_store_base as cs

SQLITE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS rejoin (browser TEXT PRIMARY KEY, class_id TEXT NOT NULL,
        member_key TEXT NOT NULL, teacher INTEGER NOT NULL, seen REAL NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS rejoin_class ON rejoin (class_id)",
)
LIVE = "SELECT 1 FROM classes WHERE id = ? AND expires > ? AND ended = 0"


def sqlite_upgrade(db) -> None:
    """A file made before teacher entries had a time: add it (0: such an entry is stale)."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(rejoin)")]
    if "seen" not in columns:
        db.execute("ALTER TABLE rejoin ADD COLUMN seen REAL NOT NULL DEFAULT 0")


class SqliteRejoin(cs.Rejoin):
    def _keep(self, db, browser: str, class_id: str, member_key: str, teacher: int,
              now: float) -> bool:
        (n,) = db.execute("SELECT COUNT(*) FROM rejoin WHERE class_id = ? AND browser != ?",
                          (class_id, browser)).fetchone()
        if n >= cs.MAX_REMEMBERED:
            return False
        db.execute("INSERT OR REPLACE INTO rejoin (browser, class_id, member_key, teacher, "
                   "seen) VALUES (?, ?, ?, ?, ?)", (browser, class_id, member_key, teacher, now))
        return True

    def remember(self, class_id: str, browser: str, member_key: str) -> bool:
        hashed = cs.browser_hash(browser)
        if hashed is None or not (cs.is_token(class_id) and cs.is_token(member_key)):
            return False

        def work(db, now):
            if not (db.execute(LIVE, (class_id, now)).fetchone() and db.execute(
                    "SELECT 1 FROM members WHERE member_key = ? AND class_id = ?",
                    (member_key, class_id)).fetchone()):
                return False
            return self._keep(db, hashed, class_id, member_key, 0, now)
        return self._tx(work)

    def remember_teacher(self, teacher_key: str, browser: str) -> bool:
        hashed = cs.browser_hash(browser)
        if hashed is None:
            return False

        def work(db, now):
            class_id = self._teacher(db, now, teacher_key)
            return class_id is not None and self._keep(db, hashed, class_id, "", 1, now)
        return self._tx(work)

    def recall(self, browser: str) -> cs.Remembered | None:
        hashed = cs.browser_hash(browser)
        if hashed is None:
            return None

        def work(db, now):
            row = db.execute(
                "SELECT r.class_id, r.member_key, r.teacher, c.teacher_key, r.seen FROM rejoin r "
                "JOIN classes c ON c.id = r.class_id WHERE r.browser = ? AND c.expires > ? "
                "AND c.ended = 0", (hashed, now)).fetchone()
            if row is None:
                return None
            class_id, member_key, teacher, teacher_key, seen = row
            if teacher and seen <= now - cs.TEACHER_AWAY_SECONDS:
                db.execute("DELETE FROM rejoin WHERE browser = ?", (hashed,))
                return None
            if teacher:
                return cs.Remembered(class_id, teacher_key=teacher_key)
            member = db.execute("SELECT name, following FROM members WHERE member_key = ? "
                                "AND class_id = ?", (member_key, class_id)).fetchone()
            if member is None:
                return None
            return cs.Remembered(class_id, member_key=member_key, name=member[0],
                                 following=bool(member[1]))
        return self._tx(work)

    def forget(self, browser: str) -> None:
        hashed = cs.browser_hash(browser)
        if hashed is not None:
            self._tx(lambda db, now: db.execute("DELETE FROM rejoin WHERE browser = ?",
                                                (hashed,)) and None)


# Redis: <prefix>rejoin:<browser hash> -> "s|<class id>|<member key>" or "t|<class id>|<time
# the teacher tab was seen>", living as long as its class; c:rejoin, a set of the class's
# browser hashes (the bound, and what expire() deletes). ARGV[3] browser hash, [4] class id or
# teacher key, [5] member key ('' for the teacher), [6] the bound.
REMEMBER = """
local c, id, role = nil, ARGV[4], 's'
if ARGV[5] == '' then
  c = teacher(ARGV[4], false)
  if not c then return 0 end
  id, role = string.sub(c, string.len(p) + 3), 't'
else
  c = live(id)
  if not c or redis.call('HGET', c, 'ended') ~= '0' then return 0 end
  if redis.call('HEXISTS', c .. ':members', ARGV[5]) == 0 then return 0 end
end
local set = c .. ':rejoin'
if redis.call('SISMEMBER', set, ARGV[3]) == 0 and
   redis.call('SCARD', set) >= tonumber(ARGV[6]) then return 0 end
redis.call('SADD', set, ARGV[3])
keep(set, c)
local key = p .. 'rejoin:' .. ARGV[3]
local last = ARGV[5]
if role == 't' then last = ARGV[2] else
  redis.call('HSET', c .. ':rejoin-of', ARGV[5], ARGV[3])
  keep(c .. ':rejoin-of', c)
end
redis.call('SET', key, role .. '|' .. id .. '|' .. last)
keep(key, c)
return 1
"""

# ARGV[3] browser hash, [4] TEACHER_AWAY_SECONDS.
RECALL = """
local key = p .. 'rejoin:' .. ARGV[3]
local entry = redis.call('GET', key)
if not entry then return false end
local role, id, member = string.match(entry, '^(%a)|([^|]+)|(.*)$')
local c = live(id)
if not c or redis.call('HGET', c, 'ended') ~= '0' then return false end
if role == 't' then
  local seen = tonumber(member)
  if not seen or seen <= now - tonumber(ARGV[4]) then
    redis.call('SREM', c .. ':rejoin', ARGV[3])
    redis.call('DEL', key)
    return false
  end
  return {id, '', redis.call('HGET', c, 'teacher')}
end
local name = redis.call('HGET', c .. ':members', member)
if not name then return false end
return {id, member, '', name, redis.call('HGET', c .. ':following', member) or '1'}
"""

FORGET = """
local key = p .. 'rejoin:' .. ARGV[3]
local entry = redis.call('GET', key)
if entry then
  local id = string.match(entry, '^%a|([^|]+)|')
  if id then redis.call('SREM', p .. 'c:' .. id .. ':rejoin', ARGV[3]) end
  redis.call('DEL', key)
end
return 1
"""

REDIS_SCRIPTS = dict(remember=REMEMBER, recall=RECALL, forget=FORGET)


class RedisRejoin(cs.Rejoin):
    def remember(self, class_id: str, browser: str, member_key: str) -> bool:
        hashed = cs.browser_hash(browser)
        if hashed is None or not (cs.is_token(class_id) and cs.is_token(member_key)):
            return False
        return bool(self._run("remember", hashed, class_id, member_key, cs.MAX_REMEMBERED))

    def remember_teacher(self, teacher_key: str, browser: str) -> bool:
        hashed = cs.browser_hash(browser)
        if hashed is None or not cs.is_token(teacher_key):
            return False
        return bool(self._run("remember", hashed, teacher_key, "", cs.MAX_REMEMBERED))

    def recall(self, browser: str) -> cs.Remembered | None:
        hashed = cs.browser_hash(browser)
        found = hashed is not None and self._run("recall", hashed, cs.TEACHER_AWAY_SECONDS)
        if not found:
            return None
        class_id, member_key, teacher_key = found[:3]
        if teacher_key:
            return cs.Remembered(class_id, teacher_key=teacher_key)
        name, following = found[3:5]
        return cs.Remembered(class_id, member_key=member_key, name=name,
                             following=following != "0")

    def forget(self, browser: str) -> None:
        hashed = cs.browser_hash(browser)
        if hashed is not None:
            self._run("forget", hashed)

    def _forget_class(self, class_id: str) -> None:
        """expire(): the browsers remembered in a class whose time is up."""
        hashes = self.redis.smembers(self.key(f"c:{class_id}:rejoin"))
        if hashes:
            self.redis.unlink(*(self.key(f"rejoin:{h}") for h in hashes))
