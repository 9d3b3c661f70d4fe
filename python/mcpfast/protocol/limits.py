"""What a server declares to govern its load (issue 27), as plain values the server, the CLI
and the load tester read alike: a `Rate` ("100/min": a token bucket's refill and burst) and a
tool's `ToolLimits` (its rate, its concurrency cap, its deadline); and the token bucket's
arithmetic (`take`), over an explicit clock, which every store of buckets applies (in a
worker, `server.state.buckets`; Redis's script, `server.state.redis_limits`, is its Lua twin).

The refusal they lead to is `mcpfast.errors.RateLimited` (-32023, experimental).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import msgspec

PERIODS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0}
PERIODS |= {"h": 3600.0, "hour": 3600.0, "d": 86400.0, "day": 86400.0}
"""The period names a `Rate` may be written with, in seconds."""

_RATE = re.compile(r"\s*(\d+)\s*/\s*(\d*\.?\d*)\s*([a-z]+)\s*(?:burst\s*=?\s*(\d+))?\s*\Z")


class Rate(msgspec.Struct, frozen=True):
    """``count`` requests per ``per_seconds``, as a token bucket: it holds ``burst`` tokens at
    most (``count`` unless said), refilled at ``count / per_seconds`` a second; a request takes
    one."""

    count: int
    per_seconds: float
    burst: int

    @property
    def refill_per_second(self) -> float:
        return self.count / self.per_seconds

    def __str__(self) -> str:
        return f"{self.count}/{self.per_seconds:g}s burst {self.burst}"


def parse_rate(text: str | Rate) -> Rate:
    """A `Rate` from ``"N/period"`` (``period``: ``s``, ``min``, ``h``, ``day`` or a multiple
    such as ``10s``), with an optional ``burst=B`` (``"100/min burst=20"``).

    Raises:
        ValueError: anything else, a zero count or a zero period.
    """
    if isinstance(text, Rate):
        return text
    found = _RATE.match(text.lower())
    if found is None or found.group(3) not in PERIODS:
        raise ValueError(f"a rate is N/period with period one of s, min, h, day: not {text!r}")
    count, multiple, unit, burst = found.groups()
    seconds = (float(multiple) if multiple else 1.0) * PERIODS[unit]
    if int(count) <= 0 or seconds <= 0:
        raise ValueError(f"a rate needs a positive count and period: not {text!r}")
    return Rate(int(count), seconds, int(burst) if burst else int(count))


class ToolLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What governs one tool's calls (`Server.add_tool`'s ``rate_limit``, ``concurrency`` and
    ``timeout``); None: the server's default applies (or nothing)."""

    rate: Rate | None = None
    """Calls of this tool per principal (each caller has its own bucket)."""
    concurrency: int | None = None
    """Calls of this tool running at once on a worker; more wait in a bounded queue."""
    timeout: float | None = None
    """Seconds a call may run before it is cancelled and answered with an error."""


NO_LIMITS = ToolLimits()


class Bucket(msgspec.Struct, frozen=True, array_like=True):
    """A token bucket's state: ``tokens`` left at ``stamp`` (seconds, on its store's clock)."""

    tokens: float
    stamp: float


class Verdict(msgspec.Struct, frozen=True):
    """What `take` decided: ``admitted``; ``remaining`` whole tokens of the tightest bucket;
    ``retry_after_ms`` until a refused request would be admitted (0 when admitted); ``limit``
    (the tightest rate's ``count``) and ``which`` (its index; -1 when no rate applied)."""

    admitted: bool
    remaining: int
    retry_after_ms: int
    limit: int
    which: int


def refill(rate: Rate, bucket: Bucket | None, now: float) -> float:
    """The tokens of ``bucket`` at ``now``: a new bucket is full (``burst``); a clock gone back
    adds nothing."""
    if bucket is None:
        return float(rate.burst)
    elapsed = max(0.0, now - bucket.stamp)
    return min(float(rate.burst), bucket.tokens + elapsed * rate.refill_per_second)


def take(
    rates: Sequence[Rate], buckets: Sequence[Bucket | None], now: float
) -> tuple[Verdict, list[Bucket]]:
    """Take one token from every bucket (``buckets[i]`` under ``rates[i]``; None: new) at
    ``now``, or none at all: admitted only when each holds a whole token. Returns the verdict
    (`judge`) and the buckets to store: refilled to ``now`` less the token, [] when refused
    (the stored ones stay right)."""
    tokens = [refill(rate, bucket, now) for rate, bucket in zip(rates, buckets, strict=True)]
    if tokens and min(tokens) < 1.0:
        return judge(rates, tokens, admitted=False), []
    tokens = [t - 1.0 for t in tokens]
    return judge(rates, tokens, admitted=True), [Bucket(t, now) for t in tokens]


def judge(rates: Sequence[Rate], tokens: Sequence[float], *, admitted: bool) -> Verdict:
    """The verdict on buckets holding ``tokens`` (after the take, when ``admitted``): the
    tightest bucket (the longest wait for a whole token, else the fewest tokens) gives
    ``limit`` and ``remaining``; a refusal waits for it."""
    which, worst, wait = -1, math.inf, 0.0
    for i, t in enumerate(tokens):
        need = 0.0 if t >= 1.0 else (1.0 - t) / rates[i].refill_per_second
        if need > wait or (need == wait and t < worst):
            which, worst, wait = i, t, need
    if which < 0:
        return Verdict(admitted, 0, 0, 0, -1)
    retry_ms = 0 if admitted else max(1, math.ceil(wait * 1000))
    return Verdict(admitted, max(0, int(worst)), retry_ms, rates[which].count, which)
