"""HTTP/1.x (RFC 9112) for both engines, the mirror of ``rust/http.rs``: request heads (the native
engine's `parse_head` and `take_head`; `scope_head` for a head Hypercorn parsed) and whole
responses (`response`)."""

from __future__ import annotations

import re
from email.utils import formatdate

import msgspec

from ..errors import HttpError


class Head(msgspec.Struct, frozen=True, eq=False):
    """A parsed request head: ``method`` and raw ``target`` as sent, the ``minor`` HTTP version
    (0 or 1: a higher 1.x is served as 1.1), ``headers`` by lower-case name, the body's framing
    (``content_length``, or ``chunked``; neither: no body), whether the connection stays open
    after the response (``keep_alive``) and whether the client waits for ``100 Continue``
    (``expect_continue``)."""

    method: str
    target: str
    minor: int
    headers: dict[str, str]
    content_length: int | None
    chunked: bool
    keep_alive: bool
    expect_continue: bool


_TOKEN_CHARS = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_METHOD = re.compile(_TOKEN_CHARS)
# RFC 9112 §3.2: every form of request-target is visible ASCII (h11 refuses anything else too)
_TARGET = re.compile(r"[\x21-\x7e]+")
# a value holds no vertical tab or form feed: whitespace a parser may split on (h11 refuses them)
_FIELDS = re.compile(rf"{_TOKEN_CHARS}:[^\r\n\v\f]*(?:\r\n{_TOKEN_CHARS}:[^\r\n\v\f]*)*")
# HTTP-version, case-sensitive (RFC 9112 section 2.3): another major is 505, a higher 1.x is
# served as 1.1 (RFC 9110 section 2.5), anything else is no version (400)
_VERSION = re.compile(r"HTTP/([0-9])\.([0-9])")
# list-valued: repeats are joined (a repeated Content-Length must repeat one value)
_JOINED = frozenset(("connection", "content-length", "transfer-encoding"))
_HEAD_END = b"\r\n\r\n"


def take_head(buffer: bytearray, limit: int, max_lines: int) -> Head | None:
    """The next request head of a connection's ``buffer`` (`parse_head`), taken off it with its
    blank line and any CRLFs before it (sent between requests, RFC 9112 section 2.2); None while
    its blank line has not come (the CRLFs taken off all the same).

    Raises:
        HttpError: 431 when the head outgrows ``limit`` bytes (as soon as ``limit + 4`` bytes
            after the CRLFs hold no blank line) or holds more than ``max_lines`` line ends, the
            buffer untouched; else `parse_head`'s refusals, the head taken off.
    """
    start = 0
    while buffer.startswith(b"\r\n", start):
        start += 2
    end = buffer.find(_HEAD_END, start)
    if end - start > limit or (end == -1 and len(buffer) - start > limit + 3):
        raise HttpError(431, "request head too large")
    if end == -1:
        del buffer[:start]
        return None
    head = bytes(buffer[start:end])
    if head.count(b"\r\n") > max_lines:
        raise HttpError(431, "too many header lines")
    del buffer[: end + 4]
    return parse_head(head)


def parse_head(head: bytes) -> Head:
    """The request whose head (without the blank line that ends it) is ``head``.

    Order of checks: NUL or a CR/LF count mismatch, the request line (three parts split on
    single spaces, a token method, a target of visible ASCII), the version (505), the header
    lines (``token:value``, no VT or FF in the value), a repeated ``Host``, a missing ``Host`` on
    1.1, then the framing (501 for a transfer coding other than ``chunked``). Names are
    lower-cased, values decoded as latin-1 and stripped of spaces and tabs; a repeated header
    keeps its last value, except ``connection``, ``content-length`` and ``transfer-encoding``,
    joined with ``", "``.

    Raises:
        HttpError: 400 for a malformed head, 505 for an HTTP major version other than 1, 501
            for a transfer coding other than ``chunked``; each with a fixed reason.
    """
    text = head.decode("latin-1")
    if "\x00" in text or text.count("\r") != text.count("\n"):
        raise HttpError(400, "bare CR, LF or NUL in the head")
    line, _, block = text.partition("\r\n")
    parts = line.split(" ")
    if (
        len(parts) != 3
        or not _METHOD.fullmatch(parts[0])
        or not _TARGET.fullmatch(parts[1])
        or "\r" in line
        or "\n" in line
    ):
        raise HttpError(400, "malformed request line")
    method, target, version_text = parts
    version = _VERSION.fullmatch(version_text)
    if version is None:
        raise HttpError(400, "malformed request line")
    if version.group(1) != "1":
        raise HttpError(505, "HTTP version not supported")
    minor = 0 if version.group(2) == "0" else 1
    headers: dict[str, str] = {}
    if block:
        if _FIELDS.fullmatch(block) is None:
            raise HttpError(400, "malformed header line")
        for field in block.split("\r\n"):
            name, _, value = field.partition(":")
            key = name.lower()
            value = value.strip(" \t")
            if key in headers:
                if key in _JOINED:
                    value = headers[key] + ", " + value
                elif key == "host":
                    raise HttpError(400, "more than one Host header")
            headers[key] = value
    if minor == 1 and "host" not in headers:
        raise HttpError(400, "missing Host header")
    length, chunked = _framing(headers)
    expect = headers.get("expect")
    return Head(
        method,
        target,
        minor,
        headers,
        length,
        chunked,
        _keeps_alive(minor, headers.get("connection")),
        expect is not None and expect.lower() == "100-continue",
    )


def scope_head(
    method: str,
    target: bytes,
    query: bytes,
    headers: list[tuple[bytes, bytes]],
    limit: int,
    max_lines: int,
) -> dict[str, str]:
    """The ``headers`` of a request head another HTTP/1 parser took (an ASGI scope's pairs:
    lower-case names, values stripped), by name, decoded as latin-1 (a repeated header keeps its
    last value), once the head passes the rules `take_head` and `parse_head` apply to bytes
    and such a parser (h11) does not: the head is measured as ``method target[?query]
    HTTP/1.1`` and one ``name: value`` line per pair.

    Raises:
        HttpError: 431 for more than ``max_lines`` header lines, then for a head over
            ``limit`` bytes; 400 for both Content-Length and Transfer-Encoding, then for a
            second Host (`parse_head`'s reasons).
    """
    if len(headers) > max_lines:
        raise HttpError(431, "too many header lines")
    size = len(method) + len(target) + (len(query) + 1 if query else 0) + 10
    for name, value in headers:
        size += len(name) + len(value) + 4
    if size > limit:
        raise HttpError(431, "request head too large")
    names = [name for name, _ in headers]
    if b"content-length" in names and b"transfer-encoding" in names:
        raise HttpError(400, "both Content-Length and Transfer-Encoding")
    if names.count(b"host") > 1:
        raise HttpError(400, "more than one Host header")
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in headers}


def _keeps_alive(minor: int, connection: str | None) -> bool:
    """Whether the connection stays open after the response (RFC 9112 section 9.3): the options
    of ``Connection`` stripped of spaces and tabs, compared case-insensitively."""
    if connection is None:
        return minor >= 1
    options = {option.strip(" \t").lower() for option in connection.split(",")}
    return "close" not in options and (minor >= 1 or "keep-alive" in options)


def _framing(headers: dict[str, str]) -> tuple[int | None, bool]:
    coding = headers.get("transfer-encoding")
    length_text = headers.get("content-length")
    if coding is not None:
        if length_text is not None:
            raise HttpError(400, "both Content-Length and Transfer-Encoding")
        if coding.lower() != "chunked":
            raise HttpError(501, f"unsupported transfer coding: {coding}")
        return None, True
    if length_text is None:
        return None, False
    lengths = {v.strip(" \t") for v in length_text.split(",")}
    if len(lengths) != 1:
        raise HttpError(400, "conflicting Content-Length values")
    (length,) = lengths
    if not length.isascii() or not length.isdigit() or len(length) > 18:
        raise HttpError(400, "invalid Content-Length")
    return int(length), False


# ---------------------------------------------------------------------------------- responses

_REASONS: dict[int, bytes] = {
    100: b"Continue",
    101: b"Switching Protocols",
    102: b"Processing",
    103: b"Early Hints",
    200: b"OK",
    201: b"Created",
    202: b"Accepted",
    203: b"Non-Authoritative Information",
    204: b"No Content",
    205: b"Reset Content",
    206: b"Partial Content",
    207: b"Multi-Status",
    208: b"Already Reported",
    226: b"IM Used",
    300: b"Multiple Choices",
    301: b"Moved Permanently",
    302: b"Found",
    303: b"See Other",
    304: b"Not Modified",
    305: b"Use Proxy",
    307: b"Temporary Redirect",
    308: b"Permanent Redirect",
    400: b"Bad Request",
    401: b"Unauthorized",
    402: b"Payment Required",
    403: b"Forbidden",
    404: b"Not Found",
    405: b"Method Not Allowed",
    406: b"Not Acceptable",
    407: b"Proxy Authentication Required",
    408: b"Request Timeout",
    409: b"Conflict",
    410: b"Gone",
    411: b"Length Required",
    412: b"Precondition Failed",
    413: b"Request Entity Too Large",
    414: b"Request-URI Too Long",
    415: b"Unsupported Media Type",
    416: b"Requested Range Not Satisfiable",
    417: b"Expectation Failed",
    418: b"I'm a Teapot",
    421: b"Misdirected Request",
    422: b"Unprocessable Entity",
    423: b"Locked",
    424: b"Failed Dependency",
    425: b"Too Early",
    426: b"Upgrade Required",
    428: b"Precondition Required",
    429: b"Too Many Requests",
    431: b"Request Header Fields Too Large",
    451: b"Unavailable For Legal Reasons",
    500: b"Internal Server Error",
    501: b"Not Implemented",
    502: b"Bad Gateway",
    503: b"Service Unavailable",
    504: b"Gateway Timeout",
    505: b"HTTP Version Not Supported",
    506: b"Variant Also Negotiates",
    507: b"Insufficient Storage",
    508: b"Loop Detected",
    510: b"Not Extended",
    511: b"Network Authentication Required",
}
"""Reason phrases in the words of Python 3.11's `http.HTTPStatus` (RFC 9110 section 15): fixed
here, for later Pythons reword some."""
_STATUS_LINES: dict[int, bytes] = {}
"""``HTTP/1.1 <status> <reason>`` and its CRLF, made once per status (at most 900)."""
DATE_END = 253_402_300_800
"""The first second of the year 10000: dates are written with four-digit years."""


class _Clock:
    """The ``date`` line of the last second asked for."""

    second = -1
    line = b""


def response(
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    length: int | None,
    chunked: bool,
    keep_alive: bool,
    limit: int,
    now: int,
) -> bytes:
    """A response head, through its blank line, then ``body``: the status line, ``date`` (of
    ``now``, seconds since the epoch), ``headers`` as given, then the framing: none for 1xx,
    204 and 304 (no body), else ``content-length`` when ``length`` is given, else
    ``transfer-encoding: chunked`` when ``chunked``, else none (the body ends with the
    connection); ``connection: close`` unless ``keep_alive``.

    Raises:
        ValueError: checked in this order: a status outside 100..999, a negative ``length``,
            ``now`` outside ``0..DATE_END``, header lines of more than ``limit`` bytes (each
            counted as name, value and four bytes).
    """
    line = _STATUS_LINES.get(status)
    if line is None:
        if not 100 <= status <= 999:
            raise ValueError(f"status {status} is not a three-digit code")
        line = _STATUS_LINES[status] = b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b""))
    if length is not None and length < 0:
        raise ValueError(f"length {length} is negative")
    if _Clock.second != now:
        if not 0 <= now < DATE_END:
            raise ValueError(f"date {now} is outside the years 1970-9999")
        _Clock.line = b"date: " + formatdate(now, usegmt=True).encode() + b"\r\n"
        _Clock.second = now
    out = [line, _Clock.line]
    size = 0
    for name, value in headers:
        size += len(name) + len(value) + 4
        out += (name, b": ", value, b"\r\n")
    if size > limit:
        raise ValueError(f"response head of {size} bytes passes max_header_bytes ({limit})")
    if status in (204, 304) or status < 200:
        pass
    elif length is not None:
        out.append(b"content-length: %d\r\n" % length)
    elif chunked:
        out.append(b"transfer-encoding: chunked\r\n")
    if not keep_alive:
        out.append(b"connection: close\r\n")
    out += (b"\r\n", body)
    return b"".join(out)
