"""The 2026-07-28 request headers both sides agree on: what a tool's ``x-mcp-header``
declarations mirror, and the headers a client sends for a request (the server's check of them
is the codec's ``check_headers``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import codec
from .methods import NAME_FIELD

ACCEPT = "application/json, text/event-stream"
"""What a Streamable HTTP client accepts, on every POST."""

ParamHeaders = tuple[tuple[str, tuple[str, ...]], ...]
"""A tool's ``x-mcp-header`` declarations: (header name, property path under ``arguments``)."""


def request_headers(
    version: str,
    method: str,
    params: dict[str, Any],
    param_headers: Mapping[str, ParamHeaders],
) -> dict[str, str]:
    """``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` for a request
    (``param_headers`` by tool name, from `header_params` of each listed tool)."""
    out = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": version,
        "mcp-method": method,
    }
    field = NAME_FIELD.get(method)
    if field is not None and isinstance(params.get(field), str):
        out["mcp-name"] = codec.encode_header_value(params[field])
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        for header, path in param_headers.get(params.get("name", ""), ()):
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, (str, int, bool)) and not isinstance(value, float):
                out["mcp-param-" + header.lower()] = codec.encode_header_value(value)
    return out


def header_params(schema: dict[str, Any]) -> ParamHeaders:
    """The ``x-mcp-header`` declarations of an input schema, as (header name, property path).

    Raises:
        ValueError: for a declaration the 2026-07-28 rules forbid (bad token, duplicate name,
            a type other than string/integer/boolean, or one not reached through ``properties``).
    """
    found: list[tuple[str, tuple[str, ...]]] = []
    _collect_headers(schema, (), found)
    names = [name.lower() for name, _ in found]
    if len(set(names)) != len(names):
        raise ValueError("x-mcp-header names must be unique (case-insensitively)")
    return tuple(found)


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")


def _collect_headers(
    schema: dict[str, Any], path: tuple[str, ...], found: list[tuple[str, tuple[str, ...]]]
) -> None:
    for key, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        name = prop.get("x-mcp-header")
        if name is not None:
            if not isinstance(name, str) or not _TOKEN.match(name):
                raise ValueError(f"x-mcp-header {name!r} is not an HTTP token")
            if prop.get("type") not in ("string", "integer", "boolean"):
                raise ValueError(f"x-mcp-header {name!r} must be a string, integer or boolean")
            found.append((name, (*path, key)))
        _collect_headers(prop, (*path, key), found)
