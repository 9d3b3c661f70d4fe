"""Rate-limit buckets shared through Redis (`RedisBus.take_tokens`): one script per request, one
round trip, Redis's ``TIME`` as the one clock of every worker and host.

The script is the Lua twin of `protocol.limits.take`'s refill and take (each bucket a hash of
``t`` tokens and ``s`` stamp, expiring once it would be full again, which is the same as
absent); it returns whether it took and the tokens left, and `protocol.limits.judge` reads the
verdict from them as a worker's own buckets do. A request's buckets are all its principal's,
so their keys share one hash tag (one slot on a Cluster)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from coredis.commands.script import Script

from ...protocol.limits import Rate, Verdict, judge
from .redis_connect import Client

TAKE = Script[bytes](
    script="""
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tokens, ok = {}, 1
for i = 1, #KEYS do
  local per, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local b = redis.call('HMGET', KEYS[i], 't', 's')
  local v = burst
  if b[1] then v = math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * per) end
  tokens[i] = v
  if v < 1 then ok = 0 end
end
for i = 1, #KEYS do
  if ok == 1 then
    local per, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
    tokens[i] = tokens[i] - 1
    redis.call('HSET', KEYS[i], 't', tostring(tokens[i]), 's', tostring(now))
    redis.call('PEXPIRE', KEYS[i], math.ceil((burst - tokens[i]) / per * 1000) + 1000)
  end
  tokens[i] = tostring(tokens[i])
end
return {ok, tokens}
"""
)


def keys_of(prefix: str, principal: str, names: Sequence[str]) -> list[str]:
    """The keys of a principal's buckets: one hash tag, the principal."""
    return [f"{prefix}rl:{{{principal}}}:{name}" for name in names]


async def take(
    call: Callable[[Callable[[Client], Awaitable[Any]]], Awaitable[Any]],
    keys: list[str],
    rates: Sequence[Rate],
) -> Verdict:
    """One token from each bucket of ``keys`` under ``rates``, or none, in one script run
    through ``call`` (the bus's bounded call: it raises `BusUnavailable`)."""
    args: list[str] = []
    for rate in rates:
        args += (repr(rate.refill_per_second), str(rate.burst))
    reply = await call(lambda client: TAKE(keys, args, client=client))
    admitted, tokens = reply
    return judge(rates, [float(t) for t in tokens], admitted=admitted == 1)
