"""What a server declares to govern its load (issue 27), as plain values the server, the CLI
and the load tester read alike: a `Rate` ("100/min": a token bucket's refill and burst) and a
tool's `ToolLimits` (its rate, its concurrency cap, its deadline).

The refusal they lead to is `mcpfast.errors.RateLimited` (-32023, experimental).
"""

from __future__ import annotations

import re

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
