"""JSON-RPC 2.0 envelopes and the error codes MCP uses, each with where it comes from."""

from __future__ import annotations

from typing import Any

import msgspec

PARSE_ERROR = -32700
"""JSON-RPC: the body is not JSON."""
INVALID_REQUEST = -32600
"""JSON-RPC: not a valid request object."""
METHOD_NOT_FOUND = -32601
"""JSON-RPC: unknown method, or one behind a capability the server does not have."""
INVALID_PARAMS = -32602
"""JSON-RPC: bad params; MCP also: unknown tool or prompt, bad cursor, missing `_meta`."""
INTERNAL_ERROR = -32603
"""JSON-RPC: the server failed."""
SESSION_NOT_FOUND = -32001
"""MCP before 2026-07-28, over HTTP: the ``Mcp-Session-Id`` names no live session (with a 404)."""
RESOURCE_NOT_FOUND_LEGACY = -32002
"""MCP before 2026-07-28: resource not found."""
HEADER_MISMATCH = -32020
"""MCP 2026-07-28: a required header is missing, malformed or differs from the body."""
MISSING_CLIENT_CAPABILITY = -32021
"""MCP 2026-07-28: the request needs a client capability it did not declare."""
UNSUPPORTED_VERSION = -32022
"""MCP 2026-07-28: the requested protocol version is not served."""
URL_ELICITATION_REQUIRED = -32042
"""MCP 2025-11-25: the request needs URL-mode elicitations first."""
RATE_LIMITED = -32023
"""Experimental (the draft SEP "rate-limited error" of 2026-08-25): the request was refused by
a rate limit, a concurrency cap or load shedding, not run; ``data.retryAfterMs`` says when to
send it again. The one place this number lives: a renumbering of the draft is this line."""

_encoder = msgspec.json.Encoder()
encode = _encoder.encode

RequestId = int | str


def result(id_: RequestId | None, payload: Any) -> bytes:
    """A result response."""
    return _encoder.encode({"jsonrpc": "2.0", "id": id_, "result": payload})


def error(id_: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    """An error response; the id is left out when it could not be read."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if id_ is not None:
        body["id"] = id_
    body["error"] = err
    return _encoder.encode(body)


def notification(method: str, params: Any = None) -> bytes:
    """A notification."""
    if params is None:
        return _encoder.encode({"jsonrpc": "2.0", "method": method})
    return _encoder.encode({"jsonrpc": "2.0", "method": method, "params": params})


def request(id_: RequestId, method: str, params: Any = None) -> bytes:
    """A request."""
    if params is None:
        return _encoder.encode({"jsonrpc": "2.0", "id": id_, "method": method})
    return _encoder.encode({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


def invalid_request(id_: RequestId | None, reason: str) -> bytes:
    """The -32600 answer to a message that is not a valid JSON-RPC message, saying why."""
    return error(id_, INVALID_REQUEST, "Invalid Request", {"reason": reason})
