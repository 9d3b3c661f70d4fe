"""HTTP/1.1 without I/O, for the native engine: parsing a request head, reading a chunked body's
size lines, and writing response heads and chunks (RFC 9112).

Only what an MCP endpoint needs: ``Content-Length`` and ``chunked`` request bodies, keep-alive,
``Expect: 100-continue``; anything ambiguous (both framings, conflicting lengths, folded
headers, a missing ``Host``) is refused rather than guessed, as request smuggling defences do.
"""

from __future__ import annotations

import re
import time
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import unquote

Headers = list[tuple[bytes, bytes]]

HEAD_END = b"\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;.*)?")
_VERSIONS = {b"HTTP/1.1": (1, 1), b"HTTP/1.0": (1, 0)}
_JOINED = frozenset(("connection", "transfer-encoding"))  # list-valued: repeats are joined


class HttpError(Exception):
    """A request the engine refuses: answer ``status`` and close the connection."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Request:
    """A parsed request head."""

    __slots__ = (
        "chunked",
        "content_length",
        "expect_continue",
        "headers",
        "keep_alive",
        "method",
        "path",
        "version",
    )

    def __init__(
        self,
        method: str,
        path: str,
        version: tuple[int, int],
        headers: dict[str, str],
        content_length: int | None,
        chunked: bool,
    ) -> None:
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        """Lower-case names. A repeated header keeps its last value (as the ASGI adapter does),
        except the list-valued framing headers, whose values are joined."""
        self.content_length = content_length
        self.chunked = chunked
        options = {t.strip() for t in headers.get("connection", "").lower().split(",")}
        self.keep_alive = "close" not in options and (version >= (1, 1) or "keep-alive" in options)
        self.expect_continue = headers.get("expect", "").lower() == "100-continue"


def parse_head(head: bytes) -> Request:
    """The request whose head (without the blank line that ends it) is ``head``.

    Raises:
        HttpError: 400 for a malformed head, 505 for another HTTP version, 501 for a transfer
            coding other than ``chunked``.
    """
    if b"\x00" in head or head.count(b"\r") != head.count(b"\n"):
        raise HttpError(400, "bare CR, LF or NUL in the head")
    lines = head.split(b"\r\n")
    if len(lines) - 1 != head.count(b"\n"):
        raise HttpError(400, "bare CR or LF in the head")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1]:
        raise HttpError(400, "malformed request line")
    method, target, version_text = parts
    version = _VERSIONS.get(version_text)
    if version is None:
        raise HttpError(505, "HTTP version not supported")
    headers: dict[str, str] = {}
    lengths: set[bytes] = set()
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.fullmatch(name):
            raise HttpError(400, "malformed header line")
        value = value.strip(b" \t")
        key = name.decode("ascii").lower()
        text = value.decode("latin-1")
        if key in headers:
            if key in _JOINED:
                text = headers[key] + ", " + text
            elif key == "host":
                raise HttpError(400, "more than one Host header")
        if key == "content-length":
            lengths.update(v.strip(b" \t") for v in value.split(b","))
        headers[key] = text
    if version >= (1, 1) and "host" not in headers:
        raise HttpError(400, "missing Host header")
    content_length, chunked = _framing(headers, lengths)
    return Request(method.decode("ascii"), _path(target), version, headers, content_length, chunked)


def _framing(headers: dict[str, str], lengths: set[bytes]) -> tuple[int | None, bool]:
    coding = headers.get("transfer-encoding")
    if coding is not None:
        if lengths:
            raise HttpError(400, "both Content-Length and Transfer-Encoding")
        if coding.strip().lower() != "chunked":
            raise HttpError(501, f"unsupported transfer coding {coding!r}")
        return None, True
    if not lengths:
        return None, False
    if len(lengths) != 1:
        raise HttpError(400, "conflicting Content-Length values")
    (length,) = lengths
    if not length.isdigit() or len(length) > 18:
        raise HttpError(400, "invalid Content-Length")
    return int(length), False


def _path(target: bytes) -> str:
    """The decoded path of an origin-form or absolute-form target, without its query."""
    text = target.decode("latin-1")
    text = text.partition("?")[0]
    if not text.startswith("/"):
        scheme, sep, rest = text.partition("://")
        if not sep or scheme.lower() not in ("http", "https"):
            raise HttpError(400, "unsupported request target")
        slash = rest.find("/")
        text = rest[slash:] if slash != -1 else "/"
    return unquote(text)


def chunk_size(line: bytes) -> int:
    """The size announced by one chunk-size line (without its CRLF); extensions are ignored.

    Raises:
        HttpError: 400 when the line is not a chunk size.
    """
    match = _CHUNK_SIZE.fullmatch(line)
    if match is None:
        raise HttpError(400, "malformed chunk size")
    return int(match.group(1), 16)


def response_head(
    status: int, headers: Headers, *, length: int | None, keep_alive: bool, version: tuple[int, int]
) -> bytes:
    """A response's status line and headers. ``length=None`` streams the body: chunked for
    HTTP/1.1, delimited by closing the connection for HTTP/1.0."""
    out = [b"HTTP/1.1 %d %s\r\n" % (status, _reason(status)), _date_line()]
    for name, value in headers:
        out += (name, b": ", value, b"\r\n")
    if status in (204, 304) or status < 200:
        pass
    elif length is not None:
        out.append(b"content-length: %d\r\n" % length)
    elif version >= (1, 1):
        out.append(b"transfer-encoding: chunked\r\n")
    if not keep_alive:
        out.append(b"connection: close\r\n")
    out.append(b"\r\n")
    return b"".join(out)


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (``data`` must not be empty: that is the last chunk)."""
    return b"%x\r\n%b\r\n" % (len(data), data)


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


class _Clock:
    """The ``date`` header line of the current second."""

    second = -1
    line = b""


def _date_line() -> bytes:
    """The ``date`` header, formatted at most once a second."""
    now = int(time.time())
    if _Clock.second != now:
        _Clock.second = now
        _Clock.line = b"date: " + formatdate(now, usegmt=True).encode() + b"\r\n"
    return _Clock.line
