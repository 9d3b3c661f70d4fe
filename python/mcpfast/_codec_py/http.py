"""HTTP/1.x request heads (RFC 9112) for the native engine (the mirror of ``rust/http.rs``)."""

from __future__ import annotations

import re

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
