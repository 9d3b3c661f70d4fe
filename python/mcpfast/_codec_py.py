"""Pure-Python twin of the Rust codec (`mcpfast._rust`).

Every function here has the same signature, results and errors as its Rust counterpart; the
differential tests feed both the same inputs. The twin is also the readable specification:

* **frame(body, max_depth)** -- classify a POST body. Order of checks: the nesting pre-scan
  (brackets outside strings; deeper than ``max_depth`` -> -32600), UTF-8 validity and JSON
  syntax (-32700), top-level type (object or array, else -32600), empty batch (-32600). Each
  message becomes a frozen `Message`: its ``kind``, readable ``id``, and for a call its
  ``method``, routed ``name``, ``_meta`` ``version`` and raw ``params``; for a response the raw
  ``payload`` of ``result``/``error``; for an invalid message its ``reason``.
* **check_headers(headers, message, param_headers)** -- the 2026-07-28 rule that headers
  mirror the body of a framed message (-32020).

Parity with the Rust codec holds for arguments of the types the stub (`mcpfast._rust`)
declares; an argument of another type is refused with ``TypeError`` by both, in words that
may differ.
* **encode_header_value(value)** -- the client side of the same rule.
* **mint_token / verify_token** -- HMAC-SHA256 signed, URL-safe tokens
  ``v1.<kid>.<issued_at>.<payload>.<mac>``.
* **parse_head(head)** -- an HTTP/1.x request head (RFC 9112) for the native engine, as
  ``(method, target, minor version, headers, content length, chunked)``; refusals raise
  `mcpfast.errors.HttpError` (400, 501, 505) with a fixed reason.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec

from .errors import CodecError, HttpError, TokenError
from .protocol.methods import NAME_FIELD

KIND_REQUEST = 0
KIND_NOTIFICATION = 1
KIND_RESULT = 2
KIND_ERROR = 3
KIND_INVALID = 4


class Message(msgspec.Struct, frozen=True, eq=False):
    """One framed message (see the module docstring for which members a kind sets)."""

    kind: int
    id: int | str | None = None
    method: str | None = None
    name: str | None = None
    version: str | None = None
    params: bytes | None = None
    payload: bytes | None = None
    reason: str | None = None


_ROUTING_FIELD = NAME_FIELD
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"

# --------------------------------------------------------------------------------------- framing

# A string token (greedy: escapes consume the next byte, an unterminated string runs to the end) or
# one bracket. Only brackets outside strings count toward the nesting depth.
_DEPTH_TOKENS = re.compile(rb'"(?:[^"\\]|\\.?)*"?|[\[\]{}]', re.DOTALL)


class _Envelope(msgspec.Struct):
    jsonrpc: object = msgspec.UNSET
    id: object = msgspec.UNSET
    method: object = msgspec.UNSET
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _Peek(msgspec.Struct):
    name: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    uri: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    taskId: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    meta: msgspec.Raw | msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name="_meta")


class _MetaPeek(msgspec.Struct):
    version: msgspec.Raw | msgspec.UnsetType = msgspec.field(
        default=msgspec.UNSET, name=_VERSION_KEY
    )


_top_decoder = msgspec.json.Decoder(_Envelope | list[msgspec.Raw])
_envelope_decoder = msgspec.json.Decoder(_Envelope)
_peek_decoder = msgspec.json.Decoder(_Peek)
_meta_peek_decoder = msgspec.json.Decoder(_MetaPeek)
_str_decoder = msgspec.json.Decoder(str)
_DEPTH_ERROR = "nesting too deep"


def _too_deep(body: bytes | bytearray, max_depth: int) -> bool:
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return False
    depth = 0
    for match in _DEPTH_TOKENS.finditer(body):
        char = match.group()
        if char == b"[" or char == b"{":
            depth += 1
            if depth > max_depth:
                return True
        elif char == b"]" or char == b"}":
            depth -= 1
    return False


def _invalid_request(reason: str, **extra: Any) -> CodecError:
    return CodecError(-32600, "Invalid Request", {"reason": reason, **extra})


def frame(body: bytes | bytearray, max_depth: int = 64) -> tuple[bool, list[Message]]:
    """Classify a body as one message or a batch and describe each message.

    Raises:
        CodecError: -32700 for bytes that are not UTF-8 JSON; -32600 for nesting deeper than
            ``max_depth``, a top level that is not an object or array, or an empty batch.
    """
    if _too_deep(body, max_depth):
        raise _invalid_request(_DEPTH_ERROR, maxDepth=max_depth)
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise CodecError(-32700, "Parse error") from None
    try:
        top = _top_decoder.decode(body)
    except msgspec.ValidationError:
        raise _invalid_request("not a JSON-RPC message") from None
    except msgspec.DecodeError:
        raise CodecError(-32700, "Parse error") from None
    if isinstance(top, _Envelope):
        return False, [_describe(top)]
    if not top:
        raise _invalid_request("empty batch")
    messages = []
    for raw in top:
        try:
            item = _envelope_decoder.decode(raw)
        except msgspec.ValidationError:
            messages.append(_invalid(None, "message must be an object"))
            continue
        messages.append(_describe(item))
    return True, messages


def _invalid(id_: int | str | None, reason: str) -> Message:
    return Message(KIND_INVALID, id_, reason=reason)


def _valid_id(value: object) -> bool:
    return type(value) is int or type(value) is str


def _describe(env: _Envelope) -> Message:
    id_ = env.id
    readable = cast("int | str | None", id_ if _valid_id(id_) else None)
    if env.jsonrpc != "2.0":
        return _invalid(readable, 'jsonrpc must be "2.0"')
    method = env.method
    if method is not msgspec.UNSET:
        if type(method) is not str:
            return _invalid(readable, "method must be a string")
        if id_ is not msgspec.UNSET and readable is None:
            return _invalid(None, "id must be a string or an integer")
        params = env.params
        name = version = None
        raw_params = None
        if params is not msgspec.UNSET:
            raw_params = bytes(params)
            if raw_params[:1] != b"{":
                return _invalid(readable, "params must be an object")
            name, version = _routing(method, raw_params)
        kind = KIND_NOTIFICATION if id_ is msgspec.UNSET else KIND_REQUEST
        return Message(kind, readable, method, name, version, raw_params)
    if env.result is not msgspec.UNSET:
        if env.error is not msgspec.UNSET:
            return _invalid(readable, "response has both result and error")
        if readable is None:
            return _invalid(None, "id must be a string or an integer")
        return Message(KIND_RESULT, readable, payload=bytes(env.result))
    if env.error is not msgspec.UNSET:
        if id_ is not msgspec.UNSET and id_ is not None and readable is None:
            return _invalid(None, "id must be a string or an integer")
        payload = bytes(env.error)
        if payload[:1] != b"{":
            return _invalid(readable, "error must be an object")
        return Message(KIND_ERROR, readable, payload=payload)
    return _invalid(readable, "not a request, notification or response")


def _routing(method: str, raw_params: bytes) -> tuple[str | None, str | None]:
    # The peeked members stay raw JSON (the last duplicate wins) and only strings are decoded, so
    # that no number is converted: 1e400 or a 5000-digit integer in `_meta` is just not a string.
    peek = _peek_decoder.decode(raw_params)
    field = _ROUTING_FIELD.get(method)
    name = _json_str(getattr(peek, field)) if field else None
    version = None
    if peek.meta is not msgspec.UNSET:
        try:
            version = _json_str(_meta_peek_decoder.decode(peek.meta).version)
        except msgspec.ValidationError:  # `_meta` is not an object
            pass
    return name, version


def _json_str(raw: msgspec.Raw | msgspec.UnsetType) -> str | None:
    """The string a raw JSON value holds, or None when it is absent or not a string."""
    if raw is msgspec.UNSET:
        return None
    try:
        return _str_decoder.decode(raw)
    except msgspec.ValidationError:
        return None


# ------------------------------------------------------------------------------ header mirroring

_CANONICAL = {
    "mcp-protocol-version": "MCP-Protocol-Version",
    "mcp-method": "Mcp-Method",
    "mcp-name": "Mcp-Name",
}
_B64_PREFIX = "=?base64?"
_B64_SUFFIX = "?="
_INTEGER = re.compile(r"-?[0-9]+\Z")
_VISIBLE = re.compile(r"[\x20-\x7e]*\Z")


def _header_error(header: str, reason: str) -> CodecError:
    return CodecError(
        -32020, f"Header mismatch: {header} {reason}", {"header": header, "reason": reason}
    )


def _read_header(headers: Mapping[str, str], key: str, canonical: str) -> str | None:
    """The header's trimmed, decoded value, or None when absent."""
    value = headers.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError("header values must be str")
    value = value.strip(" \t")
    if not _VISIBLE.match(value):
        raise _header_error(canonical, "invalid")
    if len(value) >= 11 and value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise _header_error(canonical, "invalid") from None
    return value


def _require(headers: Mapping[str, str], key: str, expected: str | None) -> None:
    canonical = _CANONICAL[key]
    value = _read_header(headers, key, canonical)
    if value is None:
        raise _header_error(canonical, "missing")
    if expected is not None and value != expected:
        raise _header_error(canonical, "mismatch")


def check_headers(
    headers: Mapping[str, str],
    message: Message,
    param_headers: Sequence[tuple[str, Sequence[str]]],
) -> None:
    """Check that the request headers mirror the body of a framed message (2026-07-28).

    ``headers`` maps lower-case names to values. ``param_headers`` lists, for the called tool,
    each ``x-mcp-header`` name with the property path under ``arguments`` it mirrors.

    Raises:
        CodecError: -32020 with ``data = {"header": <name>, "reason": missing|invalid|mismatch}``.
    """
    method, name, params = message.method, message.name, message.params
    _require(headers, "mcp-protocol-version", message.version)
    _require(headers, "mcp-method", method)
    if method in _ROUTING_FIELD:
        _require(headers, "mcp-name", name)
    if not param_headers:
        return
    arguments = _arguments(params)
    for header_name, path in param_headers:
        canonical = f"Mcp-Param-{header_name}"
        value = _at_path(arguments, path)
        text = _read_header(headers, "mcp-param-" + header_name.lower(), canonical)
        if value is None or value == b"null":
            if text is not None:
                raise _header_error(canonical, "mismatch")
            continue
        if text is None:
            raise _header_error(canonical, "missing")
        if not _same_value(text, value):
            raise _header_error(canonical, "mismatch")


# Argument values are looked up as raw JSON, so that no number is ever converted: a value such as
# 1e400 or a 5000-digit integer anywhere in `params` is just a value that no header text equals.
_members_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_JSON_INTEGER = re.compile(rb"-?[0-9]+\Z")


def _arguments(params: bytes | None) -> bytes | None:
    """The raw JSON of ``params["arguments"]`` (framed params: a JSON object), or None."""
    if params is None:
        return None
    arguments = _members_decoder.decode(params).get("arguments")
    return None if arguments is None else bytes(arguments)


def _at_path(value: bytes | None, path: Sequence[str]) -> bytes | None:
    """The raw JSON at ``path`` (the last duplicate of each member), or None."""
    for key in path:
        if value is None or value[:1] != b"{":
            return None
        member = _members_decoder.decode(value).get(key)
        value = None if member is None else bytes(member)
    return value


def _same_value(text: str, value: bytes) -> bool:
    """Whether header ``text`` mirrors the raw JSON ``value`` (not null)."""
    if value[:1] == b'"':
        return text == _str_decoder.decode(value)
    if value == b"true":
        return text == "true"
    if value == b"false":
        return text == "false"
    if _JSON_INTEGER.match(value):
        return _INTEGER.match(text) is not None and _same_integer(text, value.decode("ascii"))
    return False


def _same_integer(a: str, b: str) -> bool:
    """Whether two ``-?[0-9]+`` texts denote the same integer, whatever their size."""
    a_digits = a.lstrip("-").lstrip("0")
    b_digits = b.lstrip("-").lstrip("0")
    return a_digits == b_digits and (a_digits == "" or a.startswith("-") == b.startswith("-"))


def encode_header_value(value: str | int | bool) -> str:
    """The header text for an argument value: base64-wrapped when it cannot travel as is.

    Raises:
        TypeError: for a value that is not a str, int or bool.
    """
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is not str:
        raise TypeError("header values must be str, int or bool")
    if (
        _VISIBLE.match(value)
        and value.strip(" \t") == value
        and not (value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX))
    ):
        return value
    return _B64_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _B64_SUFFIX


# -------------------------------------------------------------------------------- signed tokens

_MAX_TOKEN = 65536
_CLOCK_SKEW = 300
_KID = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")
_IAT = re.compile(r"[0-9]{1,15}\Z")
_B64URL = re.compile(r"[A-Za-z0-9_-]*\Z")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes | None:
    """Decode unpadded base64url; None unless ``text`` is the canonical encoding."""
    if len(text) % 4 == 1:
        return None
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return data if _b64url(data) == text else None


def mint_token(key_id: str, key: bytes, payload: bytes, issued_at: int) -> str:
    """Sign ``payload`` with ``key`` as ``v1.<key_id>.<issued_at>.<payload>.<mac>``.

    Raises:
        ValueError: for a key id outside ``[A-Za-z0-9_-]{1,32}`` or an issued-at outside
            0..10**15.
    """
    if not _KID.match(key_id):
        raise ValueError("key id must be 1-32 characters of [A-Za-z0-9_-]")
    if not 0 <= issued_at < 10**15:
        raise ValueError("issued_at out of range")
    body = f"v1.{key_id}.{issued_at}.{_b64url(payload)}"
    mac = hmac.new(key, body.encode("ascii"), hashlib.sha256).digest()
    return f"{body}.{_b64url(mac)}"


def verify_token(
    token: str,
    keys: Mapping[str, bytes],
    now: int,
    max_age: int,
    max_length: int = _MAX_TOKEN,
) -> tuple[bytes, int]:
    """Verify a token and return ``(payload, issued_at)``; the MAC compare is constant-time.

    Raises:
        TokenError: ``malformed`` (also for a token longer than ``max_length`` characters),
            ``unknown_key``, ``bad_signature``, ``expired`` (older than ``max_age`` seconds) or
            ``future`` (issued more than 300 s ahead of ``now``).
    """
    if len(token) > max_length:
        raise TokenError("malformed")
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != "v1":
        raise TokenError("malformed")
    _, kid, iat, payload_text, mac_text = parts
    if not (
        _KID.match(kid)
        and _IAT.match(iat)
        and _B64URL.match(payload_text)
        and _B64URL.match(mac_text)
    ):
        raise TokenError("malformed")
    mac = _unb64url(mac_text)
    if mac is None or len(mac) != 32:
        raise TokenError("malformed")
    key = keys.get(kid)
    if key is None:
        raise TokenError("unknown_key")
    signed = token[: len(token) - len(mac_text) - 1].encode("ascii")
    if not hmac.compare_digest(hmac.new(key, signed, hashlib.sha256).digest(), mac):
        raise TokenError("bad_signature")
    payload = _unb64url(payload_text)
    if payload is None:
        raise TokenError("malformed")
    issued_at = int(iat)
    if issued_at > now + _CLOCK_SKEW:
        raise TokenError("future")
    if now - issued_at > max_age:
        raise TokenError("expired")
    return payload, issued_at


# ---------------------------------------------------------------------------------- HTTP heads

Head = tuple[str, str, int, dict[str, str], int | None, bool]

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


def parse_head(head: bytes) -> Head:
    """The request whose head (without the blank line that ends it) is ``head``.

    Order of checks: NUL or a CR/LF count mismatch, the request line (three parts split on
    single spaces, a token method, a target of visible ASCII), the version (505), the header
    lines (``token:value``, no VT or FF in the value), a repeated ``Host``, a missing ``Host`` on
    1.1, then the framing (501 for a transfer coding other than ``chunked``). Names are
    lower-cased, values decoded as latin-1 and stripped of spaces and tabs; a repeated header
    keeps its last value, except ``connection``, ``content-length`` and ``transfer-encoding``,
    joined with ``", "``.
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
    return method, target, minor, headers, length, chunked


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
