"""Exceptions raised by mcpfast.

    MCPError(code, message, data)   a JSON-RPC error that goes on the wire as is
     ├── CodecError                 the codec refused a body or its headers (-32700, -32600, -32020)
     └── ProtocolError              a peer broke a protocol rule (carries an HTTP status hint)
          ├── UrlElicitationRequired  -32042 (2025-11-25): the user must visit URLs first
          ├── ClientCapabilityError   -32021: the client cannot be asked for that
          ├── RateLimited             -32023 (HTTP 429, or 503 when shed): not run, retry later
          └── BusUnavailable          -32603 (HTTP 503): the shared state (Redis) did not answer
    TokenError(reason)              a signed token failed verification (reason: malformed,
                                    unknown_key, bad_signature, expired, future)
    TransportError                  the client could not use a server (HTTP status, body excerpt)
    HttpError(status, reason)       the native engine refuses an HTTP request (answer, close)

Both codec backends raise these same classes: the Rust extension imports them from here.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .jsonrpc import (
    INTERNAL_ERROR,
    MISSING_CLIENT_CAPABILITY,
    RATE_LIMITED,
    URL_ELICITATION_REQUIRED,
)

__all__ = [
    "ClientCapabilityError",
    "CodecError",
    "MCPError",
    "ProtocolError",
    "RateLimited",
    "TokenError",
    "TransportError",
    "UrlElicitationRequired",
]


class MCPError(Exception):
    """A JSON-RPC error: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"


class CodecError(MCPError):
    """A body or header set the codec refused; ``code`` is the JSON-RPC code to answer with."""


class ProtocolError(MCPError):
    """A protocol rule was broken; ``http_status`` is the status the reply should carry."""

    def __init__(self, code: int, message: str, data: Any = None, http_status: int = 200) -> None:
        super().__init__(code, message, data)
        self.http_status = http_status


class UrlElicitationRequired(ProtocolError):
    """Raise in a handler that cannot go on until the user completed URL-mode elicitations
    (2025-11-25 answers -32042 with them; 2026-07-28 asks for them as ``input_required``).

    Each elicitation is ``{"message": ..., "url": ..., "elicitationId": ...}``.
    """

    def __init__(
        self, elicitations: list[dict[str, Any]], message: str = "URL elicitation required"
    ) -> None:
        items = [{"mode": "url", **e} for e in elicitations]
        super().__init__(URL_ELICITATION_REQUIRED, message, {"elicitations": items})
        self.elicitations = items


class ClientCapabilityError(ProtocolError):
    """A handler asked the client for something (elicitation, sampling, roots) that the
    session's protocol revision has not, or that the client did not declare. ``message`` says
    which in words; ``data`` is ``{"requiredCapabilities": {...}}``.

    Under 2026-07-28 an uncaught one answers -32021 (HTTP 400), as the revision says; in a
    legacy session a tool that lets it escape returns an ``isError`` result with the message.
    """

    def __init__(self, message: str, capabilities: dict[str, Any]) -> None:
        super().__init__(
            MISSING_CLIENT_CAPABILITY,
            message,
            {"requiredCapabilities": capabilities},
            http_status=400,
        )


class RateLimited(ProtocolError):
    """A request refused before it ran: a rate limit (``reason="rate"``), a concurrency cap
    whose queue is full or timed out (``"concurrency"``), or load shedding (``"overloaded"``,
    HTTP 503). Experimental: the wire shape of the draft SEP "rate-limited error" (-32023,
    `jsonrpc.RATE_LIMITED`).

    On the wire: ``data`` is ``{"retryAfterMs", "reason"}`` plus ``"limit"`` and
    ``"remaining"`` when a limit applies; over HTTP (not inside an SSE stream already open)
    the status is ``http_status`` with `headers`. The client raises the same class when a
    server refuses it so, after its retries (if any) ran out.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after_ms: int,
        limit: int | None = None,
        remaining: int | None = None,
        reason: str = "rate",
        http_status: int = 429,
    ) -> None:
        data: dict[str, Any] = {"retryAfterMs": retry_after_ms, "reason": reason}
        if limit is not None:
            data["limit"] = limit
        if remaining is not None:
            data["remaining"] = remaining
        super().__init__(RATE_LIMITED, message, data, http_status=http_status)
        self.retry_after_ms = retry_after_ms
        self.limit = limit
        self.remaining = remaining
        self.reason = reason

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The HTTP headers of the refusal: ``Retry-After`` (whole seconds, at least 1) and,
        when a limit applies, ``RateLimit-Limit``, ``RateLimit-Remaining`` and
        ``RateLimit-Reset`` (seconds until a request is admitted again)."""
        seconds = str(max(1, math.ceil(self.retry_after_ms / 1000))).encode()
        out = [(b"retry-after", seconds)]
        if self.limit is not None:
            out.append((b"ratelimit-limit", str(self.limit).encode()))
            out.append((b"ratelimit-remaining", str(self.remaining or 0).encode()))
            out.append((b"ratelimit-reset", seconds))
        return out


class TokenError(Exception):
    """A signed token was rejected; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class HttpError(Exception):
    """An HTTP request the native engine refuses: answer ``status`` and close the connection."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class TransportError(Exception):
    """The client could not use a server: HTTP status (0 when none) and a body excerpt."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class BusUnavailable(ProtocolError):
    """The bus's backing store (Redis) did not answer within its bound: the request that
    needed it is refused with 503 (-32603), and ``Retry-After``; nothing was half-done."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            INTERNAL_ERROR,
            f"The server's shared state is unavailable, retry later ({detail})",
            http_status=503,
        )

    headers: ClassVar[list[tuple[bytes, bytes]]] = [(b"retry-after", b"1")]
    """The headers of the 503 reply: when to retry."""
