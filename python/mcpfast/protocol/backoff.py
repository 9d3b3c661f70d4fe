"""Reconnecting a stream that should stay open (a legacy session's GET stream,
``subscriptions/listen``), shared by the client and the load tester.

Theory of operation: a stream that dropped, or an attempt to open it that failed, is tried
again for as long as what it belongs to lives (the session, the ``listen`` block, the held
seconds); nothing here gives up on its own. Each failure in a row waits longer: a random
share (full jitter) of ``BASE`` doubled per failure, capped at ``CAP`` (`Backoff.delay`), so a
fleet of clients that lost one server does not come back in step. A wait the server asked for
is a floor: ``Retry-After`` on a 503 or 429 (`retry_after`: seconds or an HTTP-date), or the
SSE ``retry`` of the stream that dropped. An attempt that opens the stream starts the count
again (`Backoff.reset`). Which answers are worth another attempt is `retryable`.
"""

from __future__ import annotations

from datetime import UTC
from email.utils import parsedate_to_datetime

BASE = 0.25
"""Seconds: the ceiling of the first wait."""
CAP = 10.0
"""Seconds: the ceiling no wait exceeds (but a server's ``Retry-After``)."""
_MAX_DOUBLINGS = 32
"""Past this many failures the ceiling is `CAP` anyway (keeps the power finite)."""


class Backoff:
    """The waits between attempts at one stream: capped exponential, full jitter."""

    __slots__ = ("base", "cap", "failures")

    def __init__(self, base: float = BASE, cap: float = CAP) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0
        """Failed attempts since the stream was last open."""

    def delay(self, random: float, floor: float = 0.0) -> float:
        """Count one more failure; the seconds to wait before the next attempt: ``random``
        (in [0, 1)) of ``min(cap, base * 2**(failures - 1))``, but never less than ``floor``
        (what the server asked for)."""
        ceiling = min(self.cap, self.base * float(2 ** min(self.failures, _MAX_DOUBLINGS)))
        self.failures += 1
        return max(floor, random * ceiling)

    def reset(self) -> None:
        """The stream opened: the next failure waits at most `base` again."""
        self.failures = 0


def retryable(status: int) -> bool:
    """Whether an HTTP answer with ``status`` to an attempt is worth another: a server error
    (5xx) or 408, 425, 429. Any other 4xx would be answered the same again."""
    return status >= 500 or status in (408, 425, 429)


def retry_after(value: str | None, now: float) -> float | None:
    """The seconds a ``Retry-After`` header asks to wait (RFC 9110 10.2.3): a count of seconds,
    or an HTTP-date read against ``now`` (Unix seconds; a date past is 0). None when there is
    no header or it is neither."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # the asctime form carries no zone: HTTP-dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)
