"""The Lua scripts of `RedisBus`: each runs as one atomic step in Redis (keys and arguments as
each script's first lines read them). Each names every key it touches in ``KEYS``, all in one
hash slot (a Redis Cluster runs it on that slot's node); a ``PUBLISH`` names a channel, not a
key (Cluster delivers it to every node's subscribers)."""

from __future__ import annotations

from coredis.commands.script import Script

PUBLISH = Script[bytes](
    script="""
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[2])
redis.call('PUBLISH', ARGV[3], id .. ' ' .. ARGV[2])
return id
"""
)
REPLAY = Script[bytes](
    script="""
local ok, info = pcall(redis.call, 'XINFO', 'STREAM', KEYS[1])
if not ok then return false end
local fields = {}
for i = 1, #info, 2 do fields[info[i]] = info[i + 1] end
local trimmed = fields['entries-added'] > fields['length']
return {fields['last-generated-id'], trimmed and fields['recorded-first-entry-id'] or '0-0',
        redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+')}
"""
)
SAVE_SESSION = Script[bytes](
    script="""
if ARGV[1] == '1' then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
end
redis.call('PUBLISH', ARGV[4], ARGV[5])
"""
)
LOAD_SESSION = Script[bytes](
    script="""
return {redis.call('PTTL', KEYS[2]), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
"""
)
RESTORE_SESSION = Script[bytes](
    script="""
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if ARGV[1] == '1' then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
  redis.call('DEL', KEYS[1])
elseif not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
"""
)
RECORD = Script[bytes](
    script="""
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[4], '0-' .. ARGV[1], 'd', ARGV[2], 'f', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if ARGV[6] ~= '' then
  redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[5])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
redis.call('PUBLISH', KEYS[1], ARGV[1] .. ' ' .. ARGV[3] .. ' ' .. ARGV[2])
"""
)
BACKLOG = Script[bytes](
    script="""
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('XRANGE', KEYS[1], '(0-' .. ARGV[1], '+')
"""
)
SAVE_TASK = Script[bytes](
    script="""
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if #KEYS > 1 then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[2], 'NX', t[1] * 1000000 + t[2], ARGV[3])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
end
"""
)
TASK_IDS = Script[bytes](
    script="""
local alive = {}
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    table.insert(alive, ARGV[i - 1])
  else
    redis.call('ZREM', KEYS[1], ARGV[i - 1])
  end
end
return alive
"""
)
