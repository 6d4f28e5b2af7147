"""A member's own answers, read back for both class store backends: a new session of a
student's browser (a reload, a replica that died, a server restart) shows the student the
answers the store already counts for them (teaching/class_store_base.Rejoin.answers_of)."""

from __future__ import annotations

from teaching import class_store_base as cs

# Redis: every question of the class (c:questions), this member's choice in each (c:a:<q>).
# ARGV[3] class id, [4] member key.
MINE = """
local c = live(ARGV[3])
if not c then return {} end
local out = {}
for _, q in ipairs(redis.call('HKEYS', c .. ':questions')) do
  local choice = redis.call('HGET', c .. ':a:' .. q, ARGV[4])
  if choice then table.insert(out, q) table.insert(out, choice) end
end
return out
"""
ANSWER_SCRIPTS = dict(mine=MINE)


class SqliteAnswers:
    def answers_of(self, class_id: str, member_key: str) -> dict[str, str]:
        if not (cs.is_token(class_id) and cs.is_token(member_key)):
            return {}
        rows = self._tx(lambda db, now: db.execute(
            "SELECT a.question, a.choice FROM answers a JOIN classes c ON c.id = a.class_id "
            "WHERE a.class_id = ? AND a.member_key = ? AND c.expires > ?",
            (class_id, member_key, now)).fetchall(), write=False)
        return dict(rows)


class RedisAnswers:
    def answers_of(self, class_id: str, member_key: str) -> dict[str, str]:
        if not (cs.is_token(class_id) and cs.is_token(member_key)):
            return {}
        found = self._run("mine", class_id, member_key)
        return dict(zip(found[::2], found[1::2]))
