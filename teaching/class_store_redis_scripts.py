"""The Redis class store's Lua scripts (teaching/class_store_redis.py runs them): each is one
change, which Redis runs whole with nothing in between. Keys as that module's doc says."""

from __future__ import annotations

from teaching import class_store_base as cs

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
