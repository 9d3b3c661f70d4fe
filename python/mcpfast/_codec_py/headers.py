"""The 2026-07-28 rule that request headers mirror the body of a framed message, and the client
side of it (the mirror of ``rust/headers.rs``)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence

from ..errors import CodecError
from .frame import ROUTING_FIELD, Message
from .json import member, string

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
    if method in ROUTING_FIELD:
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
_JSON_INTEGER = re.compile(rb"-?[0-9]+\Z")


def _arguments(params: bytes | None) -> bytes | None:
    """The raw JSON of ``params["arguments"]`` (framed params: a JSON object), or None."""
    if params is None:
        return None
    return member(params, "arguments")


def _at_path(value: bytes | None, path: Sequence[str]) -> bytes | None:
    """The raw JSON at ``path`` (the last duplicate of each member), or None."""
    for key in path:
        if value is None or value[:1] != b"{":
            return None
        value = member(value, key)
    return value


def _same_value(text: str, value: bytes) -> bool:
    """Whether header ``text`` mirrors the raw JSON ``value`` (not null)."""
    if value[:1] == b'"':
        return text == string(value)
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
