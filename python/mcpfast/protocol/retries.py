"""A client's answer to a server's refusal ("not done, send it later"), shared by the client
and the load tester: what a refusal is, which requests may be sent again after one, and how
long to wait.

Theory of operation: a refusal is a JSON-RPC -32023 (`errors.RateLimited`, any transport), an
HTTP 429, or an HTTP 503 with ``Retry-After`` (a shed request, or the server's shared state
away: `mcpfast.server.core.refusal`); `refusal` reads one from an HTTP answer, `rate_limited`
from a -32023's ``data``. Either way nothing was run. A request *safe to repeat*
(`repeatable`: the lists, reads, ``prompts/get``, ``server/discover``, ``ping``, completion,
and a tool its ``tools/list`` entry says is read-only or idempotent) is sent again after the
wait the server asked for (``retryAfterMs``, else ``Retry-After``) plus a jitter (a random
share of `backoff.BASE` doubled per retry, capped at `backoff.CAP`), so that clients refused
together do not come back in step; at most `RetryPolicy.attempts` times, and never past
`RetryPolicy.max_wait` seconds of waiting in all: a refusal asking for more than is left is
raised at once, so no ``Retry-After`` can hold a request longer (`Retries.wait`). Anything
else raises the refusal as it came.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ..errors import MCPError, RateLimited
from ..jsonrpc import RATE_LIMITED
from ..types import Tool
from .backoff import BASE, CAP, retry_after
from .methods import LIST_KEYS

REPEATABLE = frozenset(LIST_KEYS) | {
    "resources/read",
    "prompts/get",
    "server/discover",
    "ping",
    "completion/complete",
}
"""The methods with no effect: sending one twice is the same as once."""


def idempotent(tool: Tool) -> bool:
    """Whether calling ``tool`` twice is safe, as its annotations say (``readOnlyHint`` or
    ``idempotentHint`` true)."""
    hints = tool.annotations
    if isinstance(hints, msgspec.UnsetType):
        return False
    return hints.readOnlyHint is True or hints.idempotentHint is True


def repeatable(method: str, params: dict[str, Any], tools: frozenset[str] | set[str]) -> bool:
    """Whether a refused ``method`` may be sent again: one of `REPEATABLE`, or a ``tools/call``
    of one of ``tools`` (the `idempotent` ones the client listed)."""
    if method == "tools/call":
        return params.get("name") in tools
    return method in REPEATABLE


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def rate_limited(
    message: str, data: Any, *, status: int = 429, asked: float | None = None
) -> RateLimited:
    """The `RateLimited` of a -32023 error with ``data`` (``retryAfterMs``, ``limit``,
    ``remaining``, ``reason``; a member missing or of another type is left out), answered
    with HTTP ``status``; ``asked`` (seconds of a ``Retry-After``) stands in for a missing
    ``retryAfterMs``."""
    data = data if isinstance(data, dict) else {}
    ms = _int(data.get("retryAfterMs"))
    if ms is None:
        ms = round((asked or 0.0) * 1000)
    reason = data.get("reason")
    return RateLimited(
        message,
        retry_after_ms=max(0, ms),
        limit=_int(data.get("limit")),
        remaining=_int(data.get("remaining")),
        reason=reason if isinstance(reason, str) else "rate" if status == 429 else "unavailable",
        http_status=status,
    )


def refusal(status: int, header: str | None, body: bytes, now: float) -> RateLimited | None:
    """The refusal an HTTP answer is (None: not one): a 429, or a 503 with a ``Retry-After``
    (``header``, read at ``now``, Unix seconds). Its JSON-RPC error's message and ``data``
    when ``body`` holds one, else the start of ``body``."""
    asked = retry_after(header, now)
    if status != 429 and not (status == 503 and asked is not None):
        return None
    error: Any = None
    try:
        loaded = json.loads(body)
        error = (loaded[0] if isinstance(loaded, list) and loaded else loaded).get("error")
    except (ValueError, AttributeError, TypeError):
        pass
    if not isinstance(error, dict):
        text = body[:200].decode("utf-8", "replace").strip()
        return rate_limited(text or f"HTTP {status}", None, status=status, asked=asked)
    data = error.get("data") if error.get("code") == RATE_LIMITED else None
    return rate_limited(str(error.get("message", "")), data, status=status, asked=asked)


def typed(error: MCPError) -> MCPError:
    """``error`` as a `RateLimited` when its code is -32023 (else as it is)."""
    if error.code != RATE_LIMITED or isinstance(error, RateLimited):
        return error
    return rate_limited(error.message, error.data)


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a client answers refusals (`connect(retry=...)`); ``RetryPolicy(attempts=0)``
    never retries."""

    attempts: int = 3
    """The most times a refused request is sent again."""
    max_wait: float = 30.0
    """Seconds: the most one request waits in all over its retries."""

    def start(self, repeatable: bool) -> Retries:
        """The retries of one request (none when it is not ``repeatable``)."""
        return Retries(self if repeatable else RetryPolicy(attempts=0))


DEFAULT_RETRY = RetryPolicy()
"""`connect`'s default."""


class Retries:
    """The retries of one request so far, under its `RetryPolicy`."""

    __slots__ = ("policy", "sent_again", "waited")

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.sent_again = 0
        self.waited = 0.0

    def wait(self, refused: RateLimited, random: float) -> float | None:
        """The seconds to wait before sending again after ``refused``, with ``random`` (in
        [0, 1)) the jitter's share; None: raise it (no retry left, or it asks for a longer
        wait than is left of `RetryPolicy.max_wait`)."""
        asked = refused.retry_after_ms / 1000
        left = self.policy.max_wait - self.waited
        if self.sent_again >= self.policy.attempts or asked > left:
            return None
        jitter = random * min(CAP, BASE * 2.0 ** min(self.sent_again, 32))
        delay = min(asked + jitter, left)
        self.sent_again += 1
        self.waited += delay
        return delay
