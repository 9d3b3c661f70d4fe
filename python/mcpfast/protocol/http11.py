"""HTTP/1.1 without I/O, for the native engine: parsing a request head, reading a chunked body's
size lines, and writing response heads and chunks (RFC 9112).

Only what an MCP endpoint needs: ``Content-Length`` and ``chunked`` request bodies, keep-alive,
``Expect: 100-continue``; anything ambiguous (both framings, conflicting lengths, folded
headers, a missing ``Host``) is refused rather than guessed, as request smuggling defences do.
"""

from __future__ import annotations

import re
import time
from urllib.parse import unquote

from .. import codec, jsonrpc
from ..errors import HttpError

__all__ = [
    "CONTINUE",
    "LAST_CHUNK",
    "HttpError",
    "Request",
    "check_head_size",
    "chunk",
    "chunk_size",
    "parse_head",
    "refusal_body",
    "response",
    "response_head",
    "take_head",
    "target_path",
    "trailer_field",
]

Headers = list[tuple[bytes, bytes]]

LAST_CHUNK = b"0\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;.*)?")
_FIELD_LINE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\r\n\x00]*")


Request = codec.Head
"""A parsed request head (the codec's `Head`: `parse_head`, `take_head`)."""


parse_head = codec.parse_head
"""``parse_head(head)``: the request whose head (without the blank line that ends it) is
``head``, by the codec (Rust, or its Python twin, which specifies the rules). Raises `HttpError`:
400 for a malformed head, 505 for another HTTP version, 501 for a transfer coding other than
``chunked``."""

take_head = codec.take_head
"""``take_head(buffer, limit, max_lines)``: the next request head of a connection's ``buffer``,
taken off it with the CRLFs before it; None while its blank line has not come. Raises
`HttpError`: 431 past ``limit`` bytes or ``max_lines`` line ends; else `parse_head`'s."""


def target_path(target: str) -> str:
    """The decoded path of an origin-form or absolute-form target, without its query.

    Raises:
        HttpError: 400 for any other target (authority-form, ``*``, another scheme).
    """
    if target[:1] == "/" and "?" not in target and "%" not in target:
        return target  # the usual target: nothing to take off or decode
    text = target.partition("?")[0]
    if not text.startswith("/"):
        scheme, sep, rest = text.partition("://")
        if not sep or scheme.lower() not in ("http", "https"):
            raise HttpError(400, "unsupported request target")
        slash = rest.find("/")
        text = rest[slash:] if slash != -1 else "/"
    return unquote(text)


def trailer_field(line: bytes) -> None:
    """Check one line of a chunked body's trailer section (without its CRLF): a field line.

    Raises:
        HttpError: 400 when it is not ``name:value`` with a token name.
    """
    if _FIELD_LINE.fullmatch(line) is None:
        raise HttpError(400, "malformed trailer field")


def refusal_body(reason: str) -> bytes:
    """The JSON-RPC error (-32600) that comes with a refused request head, chunk line or slow
    request, on both engines."""
    return jsonrpc.error(None, jsonrpc.INVALID_REQUEST, f"Bad Request: {reason}")


def chunk_size(line: bytes) -> int:
    """The size announced by one chunk-size line (without its CRLF); extensions are ignored.

    Raises:
        HttpError: 400 when the line is not a chunk size.
    """
    match = _CHUNK_SIZE.fullmatch(line)
    if match is None:
        raise HttpError(400, "malformed chunk size")
    return int(match.group(1), 16)


def check_head_size(headers: Headers, limit: int) -> None:
    """Refuse to write response ``headers`` of more than ``limit`` bytes (``max_header_bytes``)
    on either engine: a client may have to send a header back (``Mcp-Session-Id``) in a request
    head no larger. What grows a header is bounded where it grows (`mcpfast.server.state.sessions`);
    this is the engines' last line, the handler then failing (500).

    Raises:
        ValueError: the header lines pass ``limit`` bytes.
    """
    size = 0
    for name, value in headers:
        size += len(name) + len(value) + 4
    if size > limit:
        raise ValueError(f"response head of {size} bytes passes max_header_bytes ({limit})")


def response_head(
    status: int, headers: Headers, *, length: int | None, keep_alive: bool, version: tuple[int, int]
) -> bytes:
    """A response's status line and headers (`codec.response`, of this second). ``length=None``
    streams the body: chunked for HTTP/1.1, delimited by closing the connection for HTTP/1.0."""
    now = int(time.time())
    return codec.response(
        status, headers, b"", length, version >= (1, 1), keep_alive, _NO_LIMIT, now
    )


def response(status: int, headers: Headers, body: bytes, *, keep_alive: bool, limit: int) -> bytes:
    """A whole response framed by its length, head and ``body`` written in one call
    (`codec.response`, of this second), ``headers`` held to `check_head_size`'s ``limit``.

    Raises:
        ValueError: the header lines pass ``limit`` bytes.
    """
    now = int(time.time())
    return codec.response(status, headers, body, len(body), False, keep_alive, limit, now)


_NO_LIMIT = 2**63 - 1
"""No bound on a streamed response's head (its writer checks it: `check_head_size`)."""


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (``data`` must not be empty: that is the last chunk)."""
    return b"%x\r\n%b\r\n" % (len(data), data)
